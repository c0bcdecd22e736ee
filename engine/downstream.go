package engine

import (
	"context"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/state"
)

// downstream builds the judge of n's output: the record stages that follow
// it one after another for its dataset (each the only user of the one
// before, a Mapper that sends nothing), built as they will run. The chain
// stops at a batch stage, a costly one or a fork, whose acceptance is not
// one record's alone.
func (p *Pipeline) downstream(n *Node, shared *stages.Shared, dry bool, store *state.Store) (*stages.Downstream, error) {
	var chain []stages.Mapper
	d := &stages.Downstream{}
	for cur := n; len(cur.Users) == 1; {
		u := cur.Users[0]
		if u.Dataset != n.Dataset {
			break
		}
		pr, err := p.prepare(u, specs.InputInfo{}, shared, func(string, ...any) {}, dry, store)
		if err != nil {
			return nil, p.instanceError(u, err)
		}
		m, ok := pr.stage.(stages.Mapper)
		if _, costly := pr.stage.(stages.Costly); !ok || costly {
			break
		}
		if err := start(pr.stage); err != nil {
			return nil, p.instanceError(u, err)
		}
		chain = append(chain, m)
		d.Stages = append(d.Stages, u.ID)
		cur = u
	}
	d.Accepts = func(ctx context.Context, rec *conv.Record) (bool, error) {
		for _, m := range chain {
			out, err := m.Process(ctx, rec)
			if err != nil || out.Status != stages.Done {
				return false, err
			}
			if out.Record != nil {
				out.Record.Key = rec.Key
				rec = out.Record
			}
		}
		return true, nil
	}
	d.Kept = func(ctx context.Context) (accepted, judged int, err error) {
		if store == nil {
			return 0, 0, nil
		}
		err = store.EachOutput(ctx, []string{n.ID}, func(row state.Row) error {
			rec, err := decodeRow(row)
			if err != nil {
				return err
			}
			rec.Key = row.Key
			ok, err := d.Accepts(ctx, rec)
			judged++
			if ok && err == nil {
				accepted++
			}
			return nil
		})
		return accepted, judged, err
	}
	return d, nil
}
