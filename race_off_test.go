//go:build !race

package gtc

const raceEnabled = false
