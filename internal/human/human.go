// Package human writes counts and sizes for people to read at a glance:
// progress lines, plan's estimates, status tables, the report's axes. One
// style everywhere, so 1.23M tokens in plan is 1.23M in the report.
package human

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Count writes v with three significant digits and a k, M or G suffix
// from 10,000 up (12.3k, 456k, 1.23M, 4.5G); below that a whole number
// is exact (9999) and a fraction keeps one decimal (2.5), as a rate does.
func Count(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return sig3(v/1e9) + "G"
	case a >= 1e6:
		return sig3(v/1e6) + "M"
	case a >= 1e4:
		// 999,950 rounds to 1000k: say 1M.
		if s := sig3(v / 1e3); s != "1000" && s != "-1000" {
			return s + "k"
		}
		return sig3(v/1e6) + "M"
	case v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return trimZeros(strconv.FormatFloat(v, 'f', 1, 64))
}

// Int is Count of a whole number.
func Int[T ~int | ~int64](n T) string { return Count(float64(n)) }

// sig3 writes v (at least 1 in size, below 1000) with three significant
// digits, without trailing zeros: 1.5, 12.3, 456.
func sig3(v float64) string {
	decimals := 2
	switch a := math.Abs(v); {
	case a >= 99.95:
		decimals = 0
	case a >= 9.995:
		decimals = 1
	}
	return trimZeros(strconv.FormatFloat(v, 'f', decimals, 64))
}

func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}

// Bytes writes n bytes in binary units with one decimal: 512 B, 1.5 KiB,
// 3.2 GiB.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// Plural returns n and the noun, with an s unless n is 1: "1 instance",
// "2 instances". Messages are read by people; "1 instances" reads as a bug.
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
