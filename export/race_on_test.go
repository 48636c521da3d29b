//go:build race

package export

// raceEnabled reports whether the tests run under the race detector, which makes the
// 50,000-item memory test take minutes; make test runs that test in a second pass without it.
const raceEnabled = true
