// Package loadkit holds what the programs that drive a real gtc server share: starting
// `gtc serve` on a data directory and waiting until it is ready, sampling a process's
// resident memory from /proc, a small HTTP client, and latency percentiles. gtc-bench and
// gtc-load use it.
package loadkit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Env returns the environment for a gtc child process: the caller's environment without
// any GTC_ variable (so a developer's settings do not leak into a measurement), then
// GTC_DATA_DIR=dir and extra.
func Env(dir string, extra ...string) []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "GTC_") {
			env = append(env, e)
		}
	}
	env = append(env, "GTC_DATA_DIR="+dir)
	return append(env, extra...)
}

// Server is a `gtc serve` child process listening on a loopback port.
type Server struct {
	// Base is the server's root URL, e.g. http://127.0.0.1:41234.
	Base string
	// ReadyAfter is the time from the start of the process to its first /readyz 200.
	ReadyAfter time.Duration
	// LogPath is the file that receives the server's stdout and stderr.
	LogPath string

	cmd     *exec.Cmd
	rss     *RSSSampler
	done    chan struct{} // closed when the process has exited
	waitErr error         // the process's exit, valid once done is closed
	stopped atomic.Bool
}

// StartServer starts `bin serve` on a free loopback port with the data directory dir
// (serve.log in it receives the output) and the extra environment env, waits until
// /readyz answers 200 (30 s at most), and starts sampling its RSS every 50 ms.
func StartServer(ctx context.Context, bin, dir string, env ...string) (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	logPath := filepath.Join(dir, "serve.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, "serve")
	cmd.Env = Env(dir, append([]string{fmt.Sprintf("GTC_ADDR=127.0.0.1:%d", port), "GTC_LOG_FORMAT=json"}, env...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	s := &Server{cmd: cmd, Base: fmt.Sprintf("http://127.0.0.1:%d", port), LogPath: logPath, done: make(chan struct{})}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, err
	}
	go func() {
		s.waitErr = cmd.Wait()
		_ = logf.Close()
		close(s.done)
	}()
	hc := &http.Client{Timeout: time.Second}
	for {
		res, err := hc.Get(s.Base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				s.ReadyAfter = time.Since(start)
				break
			}
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("server exited before it was ready (%v); see %s", s.waitErr, logPath)
		default:
		}
		if time.Since(start) > 30*time.Second {
			_ = cmd.Process.Kill()
			<-s.done
			return nil, fmt.Errorf("server not ready after 30 s; see %s", logPath)
		}
		time.Sleep(2 * time.Millisecond)
	}
	s.rss = SampleRSS(cmd.Process.Pid, 50*time.Millisecond)
	return s, nil
}

// Pid is the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// CPU is the processor time the server has used so far, user and system (0 when it cannot
// be read): /proc/PID/stat, in clock ticks of 1/100 s.
func (s *Server) CPU() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.Pid()))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses and may hold spaces.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	user, _ := strconv.ParseInt(f[11], 10, 64)
	sys, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(user+sys) * 10 * time.Millisecond
}

// RSS is the server's resident set size now, in bytes (0 once it has exited).
func (s *Server) RSS() int64 { return ReadRSS(s.Pid()) }

// PeakRSS is the highest RSS sampled since the start or the last ResetPeakRSS.
func (s *Server) PeakRSS() int64 { return s.rss.Peak() }

// ResetPeakRSS starts a new peak at v (0, or the RSS read just before a measured step).
func (s *Server) ResetPeakRSS(v int64) { s.rss.Reset(v) }

// Done is closed when the server process has exited, for whatever reason.
func (s *Server) Done() <-chan struct{} { return s.done }

// ExitErr is the process's exit status once Done is closed.
func (s *Server) ExitErr() error {
	select {
	case <-s.done:
		return s.waitErr
	default:
		return nil
	}
}

// Stop asks the server to shut down (SIGINT), waits up to 30 s for it to drain, and then
// kills it. It reports whether the process exited on its own with status 0; calling it
// again does nothing.
func (s *Server) Stop() error {
	if !s.stopped.CompareAndSwap(false, true) {
		return nil
	}
	s.rss.Stop()
	select {
	case <-s.done:
		return fmt.Errorf("server had already exited: %v", s.waitErr)
	default:
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
		return s.waitErr
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
		return errors.New("server did not stop within 30 s of SIGINT; killed")
	}
}

// RSSSampler follows the peak resident set size of one process.
type RSSSampler struct {
	pid  int
	peak atomic.Int64
	stop chan struct{}
	once atomic.Bool
}

// SampleRSS reads pid's RSS every interval until Stop and keeps the peak.
func SampleRSS(pid int, every time.Duration) *RSSSampler {
	r := &RSSSampler{pid: pid, stop: make(chan struct{})}
	r.peak.Store(ReadRSS(pid))
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
				r.observe(ReadRSS(r.pid))
			}
		}
	}()
	return r
}

func (r *RSSSampler) observe(v int64) {
	for {
		p := r.peak.Load()
		if v <= p || r.peak.CompareAndSwap(p, v) {
			return
		}
	}
}

// Peak is the highest RSS seen, in bytes, the current reading included.
func (r *RSSSampler) Peak() int64 {
	r.observe(ReadRSS(r.pid))
	return r.peak.Load()
}

// Reset starts a new peak at v.
func (r *RSSSampler) Reset(v int64) { r.peak.Store(v) }

// Stop ends the sampling; Peak still answers.
func (r *RSSSampler) Stop() {
	if r.once.CompareAndSwap(false, true) {
		close(r.stop)
	}
}

// ReadRSS returns the resident set size of a process in bytes, from /proc (Linux); 0 when
// it cannot be read (another system, or the process is gone).
func ReadRSS(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "VmRSS:") {
			fields := strings.Fields(sc.Text())
			if len(fields) < 2 {
				return 0
			}
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// MiB converts bytes to MiB for printing.
func MiB(b int64) float64 { return float64(b) / (1 << 20) }

// CPUModel names the processor, for the header of a report.
func CPUModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "model name") {
			if _, v, ok := strings.Cut(line, ":"); ok {
				return strings.TrimSpace(v)
			}
		}
	}
	return runtime.GOARCH
}
