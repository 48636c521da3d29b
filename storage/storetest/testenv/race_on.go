//go:build race

package testenv

// RaceEnabled reports whether the binary was built with the race detector. A test that
// skips under it is run by the norace phase of scripts/test.sh instead.
const RaceEnabled = true
