//go:build race

package serve_test

// tailBound is how soon the browser test expects a put on the live tail:
// a second, as the console promises, and three under the race detector,
// which slows every request several times.
const tailBound = 3e9
