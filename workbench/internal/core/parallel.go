package core

import (
	"runtime"

	"golang.org/x/sync/errgroup"
)

// InParallel runs f over [0, n) cut into one range per processor, at
// least least items each (one range below that), and returns the first
// error.
func InParallel(n, least int, f func(lo, hi int) error) error {
	parts := min(runtime.GOMAXPROCS(0), max(1, n/max(least, 1)))
	if parts <= 1 {
		return f(0, n)
	}
	var g errgroup.Group
	for k := range parts {
		lo, hi := n*k/parts, n*(k+1)/parts
		g.Go(func() error { return f(lo, hi) })
	}
	return g.Wait()
}
