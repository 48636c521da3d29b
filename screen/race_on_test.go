//go:build race

package screen

// raceEnabled reports whether the tests run under the race detector. The differential test
// of the PII scanners is sequential and takes a minute under it; make test runs it in a pass
// without -race.
const raceEnabled = true
