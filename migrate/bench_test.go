// The fuzz builds (scripts/fuzz.sh, -tags fuzzing) leave this benchmark out: it runs on the
// SQLite store of job_test.go.

//go:build !fuzzing

package migrate_test

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/gtc-dev/gtc/migrate"
)

// BenchmarkMigrateSQLite migrates GTC_BENCH_MIGRATE_N (default 100,000) legacy documents in
// an SQLite file with the job's defaults (batches of 100, 4 writers): a third move to a new
// bucket, the rest are converted in place. It reports documents per second and the Go heap
// in use at 10 % and at the end of the run and at its peak (sampled after every batch),
// which shows whether memory stays flat. Each iteration loads a fresh database.
//
//	go test -run '^$' -bench MigrateSQLite -benchtime 1x ./migrate/
func BenchmarkMigrateSQLite(b *testing.B) {
	n := 100000
	if v := os.Getenv("GTC_BENCH_MIGRATE_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatalf("GTC_BENCH_MIGRATE_N=%q: %v", v, err)
		}
	}
	env := testEnv(b)
	for b.Loop() {
		b.StopTimer()
		st, _ := openSQLite(b)
		loadLegacy(b, st, "bench", n)
		runtime.GC()
		var peak, at10 uint64
		var ms runtime.MemStats
		job := newJob(st, env, migrate.Options{})
		job.Hooks.Progress = func(p migrate.Progress) {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			if at10 == 0 && p.Processed >= n/10 {
				at10 = ms.HeapInuse
			}
		}
		b.StartTimer()
		start := time.Now()
		sum, err := job.Run(context.Background())
		elapsed := time.Since(start)
		b.StopTimer()
		if err != nil || sum.Migrated != n || sum.Failed != 0 {
			b.Fatalf("run: err %v, migrated %d of %d, failed %d: %v", err, sum.Migrated, n, sum.Failed, sum.Errors)
		}
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(n)/elapsed.Seconds(), "docs/s")
		b.ReportMetric(float64(at10)/(1<<20), "heapMiB@10%")
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heapMiB@end")
		b.ReportMetric(float64(peak)/(1<<20), "heapMiB-peak")
		_ = st.Close()
		b.StartTimer()
	}
}
