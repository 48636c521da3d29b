package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A run as go test -json writes it: a passing package, a package with a failing subtest
// whose output interleaves with a passing parallel test, and a build failure.
const run = `{"Action":"start","Package":"m/a"}
{"Action":"run","Package":"m/a","Test":"TestOK"}
{"Action":"output","Package":"m/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"output","Package":"m/a","Test":"TestOK","Output":"    a_test.go:3: all good\n"}
{"Action":"pass","Package":"m/a","Test":"TestOK","Elapsed":0.5}
{"Action":"pass","Package":"m/a","Elapsed":2.5}
{"Action":"run","Package":"m/b","Test":"TestBad"}
{"Action":"output","Package":"m/b","Test":"TestBad","Output":"=== RUN   TestBad\n"}
{"Action":"run","Package":"m/b","Test":"TestBad/sub"}
{"Action":"output","Package":"m/b","Test":"TestFine","Output":"    b_test.go:9: noise from a passing test\n"}
{"Action":"output","Package":"m/b","Test":"TestBad/sub","Output":"    b_test.go:4: sub broke\n"}
{"Action":"fail","Package":"m/b","Test":"TestBad/sub","Elapsed":0.1}
{"Action":"pass","Package":"m/b","Test":"TestFine","Elapsed":7}
{"Action":"fail","Package":"m/b","Test":"TestBad","Elapsed":0.2}
{"Action":"output","Package":"m/b","Output":"FAIL\n"}
{"Action":"fail","Package":"m/b","Elapsed":9}
{"ImportPath":"m/c [m/c.test]","Action":"build-output","Output":"c_test.go:3:27: undefined: x\n"}
{"ImportPath":"m/c [m/c.test]","Action":"build-fail"}
FAIL	m/c [build failed]
`

func TestFailuresAreShownWithTheirOutput(t *testing.T) {
	var out bytes.Buffer
	r := newReport(&out)
	require.NoError(t, r.read(strings.NewReader(run)))
	assert.False(t, r.end("race"), "the run failed")
	got := out.String()
	assert.Contains(t, got, "ok  \tm/a\t2.5s\n")
	assert.NotContains(t, got, "all good", "passing tests stay quiet")
	assert.NotContains(t, got, "noise from a passing test")
	assert.Contains(t, got, "=== output of m/b TestBad/sub\n    b_test.go:4: sub broke\n")
	assert.Contains(t, got, "c_test.go:3:27: undefined: x")
	assert.Contains(t, got, "FAIL\tm/c [build failed]")
	assert.Contains(t, got, "race: FAILED:\n  m/b TestBad/sub\n  m/b TestBad\n  m/c [m/c.test] (build)\n")

	out.Reset()
	r = newReport(&out)
	require.NoError(t, r.read(strings.NewReader(strings.Join(strings.Split(run, "\n")[:6], "\n"))))
	assert.True(t, r.end("plain"))
	assert.Contains(t, out.String(), "plain: passed (1 top-level tests passed, 0 skipped, in 1 packages)")
}

func TestSummarySortsPackagesAndTests(t *testing.T) {
	f := filepath.Join(t.TempDir(), "race.json")
	require.NoError(t, os.WriteFile(f, []byte(run), 0o600))
	var out bytes.Buffer
	require.NoError(t, summarize(&out, []string{f}, 2, "race=125 fuzz=20"))
	assert.Equal(t, `Elapsed per package (phase, package), slowest first:
      9.0s  race     m/b
      2.5s  race     m/a
Slowest tests:
      7.0s  race     m/b TestFine
      0.5s  race     m/a TestOK
Wall time per phase:
     2m05s  race
     0m20s  fuzz
     2m25s  total
`, out.String())
	assert.Error(t, summarize(&out, []string{f}, 2, "race"), "a phase without its time")
}
