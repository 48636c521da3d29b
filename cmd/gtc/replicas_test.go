package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Two servers on one SQLite file: the second says at startup that the store is served by
// one process; a server that was killed does not count, one still running does.
func TestSecondServerOnOneSQLiteFileIsTold(t *testing.T) {
	const warning = "another gtc server already serves this database"
	data := t.TempDir()
	first := startServer(t, env(data))
	second := startServer(t, env(data))
	second.logContains(t, warning)
	second.logContains(t, `"lockFile":"`+data+`/gtc.db-serve"`)
	assert.NotContains(t, first.stderr.String(), warning, "the first server was alone")

	// kill -9 of the first leaves the second serving: a third is still told.
	_ = first.cmd.Process.Kill()
	<-first.done
	third := startServer(t, env(data))
	third.logContains(t, warning)

	for _, s := range []*server{second, third} {
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	alone := startServer(t, env(data))
	alone.logContains(t, `"msg":"item store is SQLite"`)
	assert.False(t, strings.Contains(alone.stderr.String(), warning), "no server left: the next is alone")
}
