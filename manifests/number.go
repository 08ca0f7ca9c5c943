package manifests

import (
	"math"
	"strconv"
	"strings"
)

// Numbers follow the Workbench reference parser, which reads a JSON number
// into one of three forms and prints each form its own way:
//
//   - a non-negative integer that fits 64 unsigned bits: printed as decimal;
//   - a negative integer down to -2^63: printed as decimal;
//   - anything else (a fraction, an exponent, -0, an integer out of those
//     ranges): a float64, computed as below and printed by formatFloat.
//
// The float64 is not the correctly rounded value of the decimal text. The
// reference accumulates up to 19-20 significant digits into a uint64
// (ignoring the digits after it would overflow, which only shift the decimal
// exponent), converts that integer to float64, and then multiplies or divides
// by a table entry 10^k (k <= 308), dividing by 10^308 first when k is larger.
// Every step rounds to nearest even, so the result can differ from the
// correctly rounded value in the last place; cairn must reproduce those bits
// because they decide the printed digits and so the digest.

// pow10 holds 1e0 ... 1e308, each the correctly rounded float64.
var pow10 = func() [309]float64 {
	var t [309]float64
	for i := range t {
		f, err := strconv.ParseFloat("1e"+strconv.Itoa(i), 64)
		if err != nil {
			panic(err)
		}
		t[i] = f
	}
	return t
}()

// overflows10 reports whether a*10+d exceeds max (the reference's overflow
// test, written so that it cannot itself overflow).
func overflows10(a, d, max uint64) bool {
	return a >= max/10 && (a > max/10 || d > max%10)
}

// number parses the number starting at p.i and returns its canonical text.
func (p *parser) number() (string, error) {
	negative := false
	if p.peek() == '-' {
		negative = true
		p.i++
	}
	if p.i >= len(p.b) {
		return "", p.fail("unexpected end of input in a number")
	}
	c := p.b[p.i]
	p.i++
	var significand uint64
	switch {
	case c == '0':
		// There can be only one leading zero.
		if isDigit(p.peek()) {
			return "", p.failAt(p.i, "invalid number (leading zero)")
		}
	case c >= '1' && c <= '9':
		significand = uint64(c - '0')
		for isDigit(p.peek()) {
			d := uint64(p.b[p.i] - '0')
			if overflows10(significand, d, math.MaxUint64) {
				f, err := p.longInteger(negative, significand)
				if err != nil {
					return "", err
				}
				return formatFloat(f), nil
			}
			p.i++
			significand = significand*10 + d
		}
	default:
		return "", p.failAt(p.i-1, "invalid number")
	}

	switch p.peek() {
	case '.':
		f, err := p.decimal(negative, significand, 0)
		if err != nil {
			return "", err
		}
		return formatFloat(f), nil
	case 'e', 'E':
		f, err := p.exponent(negative, significand, 0)
		if err != nil {
			return "", err
		}
		return formatFloat(f), nil
	}
	if !negative {
		return strconv.FormatUint(significand, 10), nil
	}
	// Two's-complement negation, wrapping: for significands above 2^63 and
	// for zero ("-0") the result is not negative and the number becomes a
	// float64 (so "-0" prints as "-0.0").
	neg := -int64(significand)
	if neg >= 0 {
		return formatFloat(-float64(significand)), nil
	}
	return strconv.FormatInt(neg, 10), nil
}

// longInteger continues an integer whose significand would overflow: the
// remaining integer digits only raise the decimal exponent.
func (p *parser) longInteger(negative bool, significand uint64) (float64, error) {
	var exp int32
	for {
		switch c := p.peek(); {
		case isDigit(c):
			p.i++
			exp++
		case c == '.':
			return p.decimal(negative, significand, exp)
		case c == 'e' || c == 'E':
			return p.exponent(negative, significand, exp)
		default:
			return p.fromParts(negative, significand, exp)
		}
	}
}

// decimal parses the fraction at p.i (which holds '.').
func (p *parser) decimal(negative bool, significand uint64, expBefore int32) (float64, error) {
	p.i++ // '.'
	var expAfter int32
	for isDigit(p.peek()) {
		d := uint64(p.b[p.i] - '0')
		if overflows10(significand, d, math.MaxUint64) {
			// Digits past the significand's capacity are dropped.
			for isDigit(p.peek()) {
				p.i++
			}
			exp := expBefore + expAfter
			if c := p.peek(); c == 'e' || c == 'E' {
				return p.exponent(negative, significand, exp)
			}
			return p.fromParts(negative, significand, exp)
		}
		p.i++
		significand = significand*10 + d
		expAfter--
	}
	if expAfter == 0 {
		if p.i >= len(p.b) {
			return 0, p.fail("unexpected end of input in a number")
		}
		return 0, p.failAt(p.i, "invalid number (no digit after the decimal point)")
	}
	exp := expBefore + expAfter
	if c := p.peek(); c == 'e' || c == 'E' {
		return p.exponent(negative, significand, exp)
	}
	return p.fromParts(negative, significand, exp)
}

// exponent parses the exponent at p.i (which holds 'e' or 'E').
func (p *parser) exponent(negative bool, significand uint64, startExp int32) (float64, error) {
	p.i++ // 'e' or 'E'
	positiveExp := true
	switch p.peek() {
	case '+':
		p.i++
	case '-':
		p.i++
		positiveExp = false
	}
	if p.i >= len(p.b) {
		return 0, p.fail("unexpected end of input in a number")
	}
	c := p.b[p.i]
	p.i++
	if !isDigit(c) {
		return 0, p.failAt(p.i-1, "invalid number (no digit in the exponent)")
	}
	exp := uint64(c - '0')
	for isDigit(p.peek()) {
		d := uint64(p.b[p.i] - '0')
		p.i++
		if overflows10(exp, d, math.MaxInt32) {
			// An exponent beyond 32 bits: zero for a zero significand or a
			// negative exponent, out of range otherwise.
			if significand != 0 && positiveExp {
				return 0, p.failAt(p.i-1, "number out of range")
			}
			for isDigit(p.peek()) {
				p.i++
			}
			if negative {
				return math.Copysign(0, -1), nil
			}
			return 0, nil
		}
		exp = exp*10 + d
	}
	var final int32
	if positiveExp {
		final = saturatingAdd(startExp, int32(exp))
	} else {
		final = saturatingAdd(startExp, -int32(exp))
	}
	return p.fromParts(negative, significand, final)
}

func saturatingAdd(a, b int32) int32 {
	s := int64(a) + int64(b)
	switch {
	case s > math.MaxInt32:
		return math.MaxInt32
	case s < math.MinInt32:
		return math.MinInt32
	}
	return int32(s)
}

// fromParts computes significand * 10^exp the way the reference does: one
// conversion of the significand, then one multiplication or division by a
// table power of ten, dividing by 1e308 first while the power is off the
// table. A finite input that overflows to infinity is out of range.
func (p *parser) fromParts(negative bool, significand uint64, exp int32) (float64, error) {
	f := float64(significand)
	for {
		if exp != math.MinInt32 {
			k := exp
			if k < 0 {
				k = -k
			}
			if k < int32(len(pow10)) {
				if exp >= 0 {
					f *= pow10[k]
					if math.IsInf(f, 0) {
						return 0, p.fail("number out of range")
					}
				} else {
					f /= pow10[k]
				}
				break
			}
		}
		if f == 0 {
			break
		}
		if exp >= 0 {
			return 0, p.fail("number out of range")
		}
		f /= 1e308
		exp += 308
	}
	if negative {
		f = -f
	}
	return f, nil
}

// formatFloat prints a finite float64 as the reference does: the shortest
// digits that read back to the same float64, laid out as
//
//   - "0.0" or "-0.0" for zeros;
//   - plain decimal when the exponent of the first digit, e, is in [-5, 15]:
//     an integral value gets ".0" ("1.0", "1000000000000000.0"), others
//     print their digits ("123.456", "0.00001");
//   - otherwise d[.ddd]eX, the exponent in decimal with a sign only when
//     negative and no leading zeros ("1e16", "1e21", "1.5e-7", "5e-324"),
//     as the reference facts give it ("1e21").
func formatFloat(f float64) string {
	if f == 0 {
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	var sb strings.Builder
	if f < 0 {
		sb.WriteByte('-')
		f = -f
	}
	// Shortest round-trip digits in the form d.ddde±XX.
	s := strconv.FormatFloat(f, 'e', -1, 64)
	mant, expText, _ := strings.Cut(s, "e")
	digits := strings.Replace(mant, ".", "", 1)
	e, err := strconv.Atoi(expText)
	if err != nil {
		panic("manifests: unexpected float form " + s)
	}
	n := len(digits)
	if e >= -5 && e <= 15 {
		switch {
		case n-1 <= e:
			sb.WriteString(digits)
			sb.WriteString(strings.Repeat("0", e+1-n))
			sb.WriteString(".0")
		case e >= 0:
			sb.WriteString(digits[:e+1])
			sb.WriteByte('.')
			sb.WriteString(digits[e+1:])
		default:
			sb.WriteString("0.")
			sb.WriteString(strings.Repeat("0", -e-1))
			sb.WriteString(digits)
		}
		return sb.String()
	}
	sb.WriteByte(digits[0])
	if n > 1 {
		sb.WriteByte('.')
		sb.WriteString(digits[1:])
	}
	sb.WriteByte('e')
	sb.WriteString(strconv.Itoa(e))
	return sb.String()
}
