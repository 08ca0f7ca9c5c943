package manifests

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestFormatFloat pins the float layout: plain decimal for first-digit
// exponents in [-5, 15], integral values with ".0", exponent form with an
// explicit sign otherwise. The digit strings of the reference formatter's own
// test vectors are included (subnormals, shortest under- and overestimates).
func TestFormatFloat(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want string
	}{
		{0, "0.0"},
		{math.Copysign(0, -1), "-0.0"},
		{1, "1.0"},
		{-1, "-1.0"},
		{0.1, "0.1"},
		{100, "100.0"},
		{123.456, "123.456"},
		{-123.456, "-123.456"},
		{1e15, "1000000000000000.0"},
		{9.999999999999998e15, "9999999999999998.0"},
		{1e16, "1e16"},
		{1.5e16, "1.5e16"},
		{1e20, "1e20"},
		{1e21, "1e21"},
		{1e100, "1e100"},
		{1.5e300, "1.5e300"},
		{math.MaxFloat64, "1.7976931348623157e308"},
		{-math.MaxFloat64, "-1.7976931348623157e308"},
		{1234.5e-2, "12.345"},
		{1e-5, "0.00001"},
		{1.234e-5, "0.00001234"},
		{9.99e-6, "9.99e-6"},
		{1e-6, "1e-6"},
		{1e-7, "1e-7"},
		{1.5e-7, "1.5e-7"},
		{math.SmallestNonzeroFloat64, "5e-324"},
		{1e-323, "1e-323"},
		{1.2e-322, "1.2e-322"},
		{1.24e-322, "1.24e-322"},
		{1.234e-320, "1.234e-320"},
		{2.2250738585072014e-308, "2.2250738585072014e-308"},
		{6.62607015e-34, "6.62607015e-34"},
		{-4.932096661796888e-226, "-4.932096661796888e-226"},
		{3.439070283483335e35, "3.439070283483335e35"},
		{6.606854224493745e-17, "6.606854224493745e-17"},
		{6.079537928711555e61, "6.079537928711555e61"},
		{18446744073709551616, "1.8446744073709552e19"},
		{-9223372036854775808, "-9.223372036854776e18"},
		{9007199254740993, "9007199254740992.0"},
	} {
		if got := formatFloat(c.in); got != c.want {
			t.Errorf("formatFloat(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestFormatFloatRoundTrips checks that every printed float reads back to
// the same bits under a correctly rounding parser: every power of two and a
// sample of random finite bit patterns.
func TestFormatFloatRoundTrips(t *testing.T) {
	check := func(f float64) {
		s := formatFloat(f)
		back, err := strconv.ParseFloat(s, 64)
		if err != nil || math.Float64bits(back) != math.Float64bits(f) {
			t.Fatalf("formatFloat(%v) = %q reads back as %v (%v)", f, s, back, err)
		}
	}
	for e := -1074; e <= 1023; e++ {
		check(math.Ldexp(1, e))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		f := math.Float64frombits(r.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		check(f)
	}
}

// TestPow10Table checks the table against exact float literals at the ends
// and where float64 powers of ten stop being exact.
func TestPow10Table(t *testing.T) {
	for k, want := range map[int]float64{0: 1, 1: 10, 22: 1e22, 23: 1e23, 292: 1e292, 308: 1e308} {
		if pow10[k] != want {
			t.Errorf("pow10[%d] = %v, want %v", k, pow10[k], want)
		}
	}
}
