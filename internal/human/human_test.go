package human

import (
	"math"
	"testing"
)

func TestCount(t *testing.T) {
	tests := []struct {
		v    float64
		want string
	}{
		{0, "0"},
		{7, "7"},
		{2.54, "2.5"},
		{2.96, "3"},
		{99.5, "99.5"},
		{950.4, "950"},
		{9999, "9999"},
		{10_000, "10k"},
		{12_345, "12.3k"},
		{456_789, "457k"},
		{999_949, "1M"},
		{999_999, "1M"},
		{1_000_000, "1M"},
		{1_234_567, "1.23M"},
		{10_000_000, "10M"},
		{12_340_000, "12.3M"},
		{4.5e9, "4.5G"},
		{-12_345, "-12.3k"},
	}
	for _, tt := range tests {
		if got := Count(tt.v); got != tt.want {
			t.Errorf("Count(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
	if got := Int(int64(1_500_000)); got != "1.5M" {
		t.Errorf("Int(1500000) = %q", got)
	}
}

func TestBytes(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{1023, "1023 B"},
		{1536, "1.5 KiB"},
		{5 << 20, "5.0 MiB"},
		{3 << 30, "3.0 GiB"},
		{math.MaxInt64, "8.0 EiB"},
	}
	for _, tt := range tests {
		if got := Bytes(tt.n); got != tt.want {
			t.Errorf("Bytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
