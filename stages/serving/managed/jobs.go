package managed

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/eaglet-dev/eaglet/internal/serve"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
)

// jobsPrefix starts the key of every replica's record: servers/<endpoint>/<replica>.
const jobsPrefix = "servers/"

func jobKey(endpoint string, replica int) string {
	return jobsPrefix + endpoint + "/" + strconv.Itoa(replica)
}

// record keeps rec at once: a kill right after a submit must not lose the job.
func (g *Group) record(rec serve.Record) {
	b, err := json.Marshal(rec)
	if err == nil {
		err = g.Jobs.PutCheckpoint(jobKey(g.cfg.Name, rec.Replica), b)
	}
	if err != nil {
		g.logf("%s replica %d: record its server: %v", g.cfg.Name, rec.Replica, err)
	}
}

// forget clears the record of a replica stopped.
func (g *Group) forget(replica int) {
	g.Jobs.KeepLater(jobKey(g.cfg.Name, replica), nil)
	if err := g.Jobs.Flush(); err != nil {
		g.logf("%s replica %d: forget its server: %v", g.cfg.Name, replica, err)
	}
}

// recorded reads the records endpoint's replicas left in cp.
func recorded(cp stages.Checkpoints, endpoint string) ([]serve.Record, error) {
	var recs []serve.Record
	err := cp.EachCheckpoint(jobsPrefix+endpoint+"/", func(key string, v []byte) error {
		var rec serve.Record
		if err := json.Unmarshal(v, &rec); err != nil {
			return fmt.Errorf("record %s: %w", key, err)
		}
		recs = append(recs, rec)
		return nil
	})
	return recs, err
}

// leftovers are the replicas an earlier run recorded, for Start to adopt
// or cancel; those beyond today's replicas are stopped here, as no start
// would take them.
func (g *Group) leftovers(ctx context.Context) []serve.Record {
	recs, err := recorded(g.Jobs, g.cfg.Name)
	if err != nil {
		g.logf("%s: %v", g.cfg.Name, err)
	}
	var adopt []serve.Record
	for _, rec := range recs {
		if rec.Replica < g.opts.Replicas {
			adopt = append(adopt, rec)
			continue
		}
		if err := g.stopRecorded(rec); err != nil {
			g.logf("%v", err)
		}
	}
	return adopt
}

// stopRecorded stops a replica an earlier run recorded and clears its record.
func (g *Group) stopRecorded(rec serve.Record) error {
	r, err := g.adopted(rec)
	if err != nil {
		return err
	}
	return r.Stop()
}

// adopted is rec's replica, whose Stop clears its record.
func (g *Group) adopted(rec serve.Record) (*serve.Replica, error) {
	cfg := g.cfg
	cfg.Forget = g.forget
	return serve.Adopted(cfg, rec)
}

// Up is a replica an earlier run recorded as started and did not stop, as
// `eaglet servers` lists it.
type Up struct {
	Endpoint string
	serve.Record
	// Err says why it does not answer; nil when it does.
	Err error
	r   *serve.Replica
}

// Stop stops the replica (its job cancelled, or its process group ended)
// and clears its record.
func (u *Up) Stop() error { return u.r.Stop() }

// Ups lists what the runs of s recorded in jobs as still up, endpoint by
// endpoint and replica by replica, probing each once.
func Ups(ctx context.Context, s *specs.Spec, jobs stages.Checkpoints) ([]*Up, error) {
	var ups []*Up
	for _, ep := range s.Endpoints {
		if ep.Launch == nil {
			continue
		}
		g, err := New(s, ep, nil)
		if err != nil {
			return nil, err
		}
		g.Jobs = jobs
		recs, err := recorded(jobs, ep.Name)
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			r, err := g.adopted(rec)
			if err != nil {
				return nil, err
			}
			u := &Up{Endpoint: ep.Name, Record: rec, r: r}
			u.Err = r.Answers(ctx)
			u.URL = r.URL
			ups = append(ups, u)
		}
	}
	return ups, nil
}
