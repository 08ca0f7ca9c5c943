//go:build !race

package serve_test

// tailBound is how soon the browser test expects a put on the live tail:
// a second, as the console promises (three under the race detector).
const tailBound = 1e9
