package serve

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// lowestPort is the lowest port a replica gets: above those services
// usually claim.
const lowestPort = 10000

// freePorts returns n distinct ports free on this machine, held all at
// once while picked so no two replicas get the same. They are picked
// below the kernel's ephemeral range, which listen(":0") and outgoing
// connections draw from: a port of that range, free when picked, may be
// another's by the time the server binds it, one outside it is only taken
// by someone asking for it by number.
func freePorts(n int) ([]int, error) {
	high := ephemeralLow()
	var ports []int
	for try := 0; len(ports) < n; try++ {
		if try == 1000 {
			return nil, fmt.Errorf("no free port in [%d, %d) after %d tries", lowestPort, high, try)
		}
		p := lowestPort + rand.IntN(high-lowestPort)
		ln, err := net.Listen("tcp", ":"+strconv.Itoa(p))
		if err != nil {
			continue // taken on some interface
		}
		defer ln.Close()
		ports = append(ports, p)
	}
	return ports, nil
}

// ephemeralLow is the first port of Linux's ephemeral range (32768 where
// it cannot be read, the default of Linux and of IANA's 49152 alike
// leaving room below).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	low, err := strconv.Atoi(f[0])
	if err != nil || low <= lowestPort+1000 {
		return 32768
	}
	return low
}
