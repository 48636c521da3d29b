// Command testtimes reads the output of `go test -json` and makes it readable: a line per
// package as it finishes (like plain go test), the whole output of every failing test and of
// every package that failed outside a test (a panic, a TestMain error, a build error), and
// the exit status of the run (1 when anything failed). scripts/test.sh pipes each phase of
// `make test` through it.
//
//	go test -json ./... | testtimes [-save FILE] [-phase NAME]
//
// With -save it also writes the input, as is, to FILE. Given files instead of standard
// input (-summary), it prints the per-package elapsed times of each, sorted, the slowest
// tests and, with -phases, the wall time of each phase:
//
//	testtimes -summary [-top N] [-phases "race=312 plain=201"] FILE...
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Time        time.Time
	Action      string
	Package     string
	ImportPath  string // build-output and build-fail
	Test        string
	Elapsed     float64
	Output      string
	FailedBuild string
}

func main() {
	save := flag.String("save", "", "also write the input to this `file`")
	phase := flag.String("phase", "", "name of the phase, printed with its result")
	summary := flag.Bool("summary", false, "summarize the given files of saved `go test -json` output")
	top := flag.Int("top", 15, "with -summary, how many of the slowest tests to list")
	phases := flag.String("phases", "", `with -summary, wall times to print: "name=seconds ..."`)
	flag.Parse()
	if *summary {
		if err := summarize(os.Stdout, flag.Args(), *top, *phases); err != nil {
			fmt.Fprintln(os.Stderr, "testtimes:", err)
			os.Exit(2)
		}
		return
	}
	in := io.Reader(os.Stdin)
	if *save != "" {
		f, err := os.Create(*save)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testtimes:", err)
			os.Exit(2)
		}
		defer f.Close()
		in = io.TeeReader(os.Stdin, f)
	}
	r := newReport(os.Stdout)
	if err := r.read(in); err != nil {
		fmt.Fprintln(os.Stderr, "testtimes:", err)
		os.Exit(2)
	}
	if !r.end(*phase) {
		os.Exit(1)
	}
}

// report follows one run as its events arrive.
type report struct {
	w      io.Writer
	out    map[string][]string // output so far, by package + "\x00" + test ("" for the package's own)
	failed []string            // "package" or "package test", in the order they failed
	seen   map[string]bool     // packages that reported their result
	pass   int
	skip   int
}

func newReport(w io.Writer) *report {
	return &report{w: w, out: map[string][]string{}, seen: map[string]bool{}}
}

func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			// Not an event (go vet or the go command writing to the same stream): as is.
			fmt.Fprintln(r.w, string(line))
			continue
		}
		r.event(e)
	}
	return sc.Err()
}

func (r *report) event(e event) {
	switch e.Action {
	case "build-output":
		r.out[e.ImportPath+"\x00build"] = append(r.out[e.ImportPath+"\x00build"], e.Output)
	case "build-fail":
		fmt.Fprintf(r.w, "--- BUILD FAIL %s\n%s", e.ImportPath, strings.Join(r.out[e.ImportPath+"\x00build"], ""))
		r.failed = append(r.failed, e.ImportPath+" (build)")
	case "output":
		k := e.Package + "\x00" + e.Test
		r.out[k] = append(r.out[k], e.Output)
	case "pass", "skip", "fail":
		k := e.Package + "\x00" + e.Test
		if e.Test != "" {
			if e.Action == "fail" {
				// The test's own output, its subtests' included, then the --- FAIL line.
				fmt.Fprintf(r.w, "=== output of %s %s\n%s", e.Package, e.Test, strings.Join(r.out[k], ""))
				r.failed = append(r.failed, e.Package+" "+e.Test)
			}
			// A parent's output holds its subtests' lines too; drop what is settled.
			delete(r.out, k)
			if e.Action == "pass" && !strings.Contains(e.Test, "/") {
				r.pass++
			} else if e.Action == "skip" && !strings.Contains(e.Test, "/") {
				r.skip++
			}
			return
		}
		r.seen[e.Package] = true
		switch e.Action {
		case "fail":
			// The package's own output: a panic, a timeout, TestMain, the FAIL line.
			fmt.Fprintf(r.w, "%s", strings.Join(r.out[k], ""))
			if !slices.ContainsFunc(r.failed, func(f string) bool { return strings.HasPrefix(f, e.Package+" ") }) {
				r.failed = append(r.failed, e.Package)
			}
		case "skip":
			fmt.Fprintf(r.w, "?   \t%s\t[no test files]\n", e.Package)
		default:
			fmt.Fprintf(r.w, "ok  \t%s\t%.1fs\n", e.Package, e.Elapsed)
		}
		for key := range r.out {
			if strings.HasPrefix(key, e.Package+"\x00") {
				delete(r.out, key)
			}
		}
	}
}

// end prints the outcome and reports whether everything passed.
func (r *report) end(phase string) bool {
	name := "tests"
	if phase != "" {
		name = phase
	}
	if len(r.failed) == 0 {
		fmt.Fprintf(r.w, "%s: passed (%d top-level tests passed, %d skipped, in %d packages)\n", name, r.pass, r.skip, len(r.seen))
		return true
	}
	fmt.Fprintf(r.w, "%s: FAILED:\n", name)
	for _, f := range r.failed {
		fmt.Fprintf(r.w, "  %s\n", f)
	}
	return false
}

// timing is one package's or one test's elapsed time in one file.
type timing struct {
	file, pkg, test string
	elapsed         float64
}

func summarize(w io.Writer, files []string, top int, phases string) error {
	var pkgs, tests []timing
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
		base := strings.TrimSuffix(filepath.Base(name), ".json")
		for sc.Scan() {
			var e event
			if json.Unmarshal(sc.Bytes(), &e) != nil || (e.Action != "pass" && e.Action != "fail") {
				continue
			}
			t := timing{file: base, pkg: e.Package, test: e.Test, elapsed: e.Elapsed}
			if e.Test == "" {
				pkgs = append(pkgs, t)
			} else if !strings.Contains(e.Test, "/") {
				tests = append(tests, t)
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	slowest := func(a, b timing) int { return cmp.Compare(b.elapsed, a.elapsed) }
	fmt.Fprintln(w, "Elapsed per package (phase, package), slowest first:")
	slices.SortStableFunc(pkgs, slowest)
	for _, p := range pkgs {
		fmt.Fprintf(w, "  %7.1fs  %-8s %s\n", p.elapsed, p.file, p.pkg)
	}
	if top > 0 && len(tests) > 0 {
		slices.SortStableFunc(tests, slowest)
		fmt.Fprintf(w, "Slowest tests:\n")
		for _, t := range tests[:min(top, len(tests))] {
			fmt.Fprintf(w, "  %7.1fs  %-8s %s %s\n", t.elapsed, t.file, t.pkg, t.test)
		}
	}
	if phases != "" {
		fmt.Fprintln(w, "Wall time per phase:")
		total := 0
		for _, f := range strings.Fields(phases) {
			name, secs, ok := strings.Cut(f, "=")
			n, err := strconv.Atoi(secs)
			if !ok || err != nil {
				return fmt.Errorf("-phases: %q is not name=seconds", f)
			}
			total += n
			fmt.Fprintf(w, "  %4dm%02ds  %s\n", n/60, n%60, name)
		}
		fmt.Fprintf(w, "  %4dm%02ds  total\n", total/60, total%60)
	}
	return nil
}
