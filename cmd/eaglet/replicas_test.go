package main

import (
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/stages/serving/managed"
)

// TestPrintReplicas renders a launched endpoint in one line: each
// replica's state, uptime and restarts, then the GPU-hours, priced when
// gpu_hour_price is set.
func TestPrintReplicas(t *testing.T) {
	for _, tc := range []struct {
		name string
		figs []managed.Figures
		want string
	}{
		{"none", nil, ""},
		{"unpriced", []managed.Figures{{Endpoint: "target", GPUHours: 0.5, Replicas: []managed.ReplicaFigures{
			{Replica: 0, State: managed.ReplicaStopped, UptimeSeconds: 900},
		}}}, "launched target: replica 0 stopped, up 15m0s; 0.50 GPU-hours\n"},
		{"a restart, priced", []managed.Figures{{Endpoint: "target", GPUHours: 16, Dollars: 40, Replicas: []managed.ReplicaFigures{
			{Replica: 0, State: managed.ReplicaStopped, UptimeSeconds: 3600},
			{Replica: 1, State: managed.ReplicaLost, Restarts: 1, UptimeSeconds: 40},
		}}}, "launched target: replica 0 stopped, up 1h0m0s; replica 1 lost, up 40s, 1 restart; 16.00 GPU-hours ($40.00)\n"},
	} {
		var b strings.Builder
		printReplicas(&b, "", tc.figs)
		if b.String() != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, b.String(), tc.want)
		}
	}
}
