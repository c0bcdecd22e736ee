package managed

// Figures are what a launched endpoint's replicas did over a run, for
// status, the run's summary and the report.
type Figures struct {
	Endpoint string           `json:"endpoint"`
	Replicas []ReplicaFigures `json:"replicas"`
	// GPUHours sums each replica's uptime times its GPUs (a replica with
	// none given counting as one); Dollars prices them at the launch's
	// gpu_hour_price (0: none set).
	GPUHours float64 `json:"gpu_hours"`
	Dollars  float64 `json:"dollars,omitempty"`
}

// ReplicaFigures are one replica's state, restarts and uptime.
type ReplicaFigures struct {
	Replica int `json:"replica"`
	// State is up, restarting, lost (its restarts spent), stopped, or
	// kept (left running by launch.keep).
	State         string  `json:"state"`
	Restarts      int     `json:"restarts"`
	UptimeSeconds float64 `json:"uptime_seconds"`
}

// Replica states in Figures.
const (
	ReplicaUp         = "up"
	ReplicaRestarting = "restarting"
	ReplicaLost       = "lost"
	ReplicaStopped    = "stopped"
	ReplicaKept       = "kept"
)

// Figures reports the replicas as they are now: after Close, as the run
// leaves them.
func (g *Group) Figures() Figures {
	gpus := 1
	if shares, err := g.opts.Shares(g.cfg.Written, nil); err == nil && len(shares) > 0 && len(shares[0]) > 0 {
		gpus = len(shares[0])
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	f := Figures{Endpoint: g.cfg.Name}
	for i, r := range g.replicas {
		up := r.uptime()
		rf := ReplicaFigures{Replica: i, Restarts: r.restarts, UptimeSeconds: up.Seconds()}
		switch {
		case r.lost:
			rf.State = ReplicaLost
		case g.sg == nil && g.opts.Keep && up > 0:
			rf.State = ReplicaKept
		case g.sg == nil:
			rf.State = ReplicaStopped
		case r.since.IsZero():
			rf.State = ReplicaRestarting
		default:
			rf.State = ReplicaUp
		}
		f.Replicas = append(f.Replicas, rf)
		f.GPUHours += up.Hours() * float64(gpus)
	}
	f.Dollars = f.GPUHours * g.opts.GPUHourPrice
	return f
}
