package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is a child process of the bench: the GCS emulator or a `cairn
// serve`.
type proc struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{} // closed once waited for
	err    error         // Wait's answer, once exited is closed

	mu   sync.Mutex
	tail bytes.Buffer // the last of its output, for errors
}

// startProc runs bin with args, with env added to the bench's
// environment (less cairn's settings), and returns once ready has found, in a
// line of its standard output or error, what it waits for (an address),
// or fails after 30 s or when the process exits first.
func startProc(ctx context.Context, name, bin string, args, env []string, ready func(line string) (string, bool)) (*proc, string, error) {
	p := &proc{name: name, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(childEnv(), env...)
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		return nil, "", err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("bench: start %s: %w", name, err)
	}
	found := make(chan string, 1)
	var scans sync.WaitGroup
	for _, r := range []io.Reader{stdout, stderr} {
		scans.Go(func() {
			sc := bufio.NewScanner(r)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				line := sc.Text()
				p.keep(line)
				if v, ok := ready(line); ok {
					select {
					case found <- v:
					default:
					}
				}
			}
			io.Copy(io.Discard, r)
		})
	}
	go func() {
		scans.Wait() // Wait closes the pipes: read them to the end first
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case v := <-found:
		return p, v, nil
	case <-p.exited:
		return nil, "", fmt.Errorf("bench: %s exited before it was ready (%v): %s", name, p.err, p.output())
	case <-t.C:
		p.stop()
		return nil, "", fmt.Errorf("bench: %s not ready within 30s: %s", name, p.output())
	case <-ctx.Done():
		p.stop()
		return nil, "", ctx.Err()
	}
}

// childEnv is the bench's environment without cairn's own settings, so
// that a developer's CAIRN_ variables do not reach the children.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CAIRN_") {
			env = append(env, kv)
		}
	}
	return env
}

// keep remembers the last 8 KiB of output.
func (p *proc) keep(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tail.WriteString(line + "\n")
	if n := p.tail.Len(); n > 8<<10 {
		p.tail.Next(n - 8<<10)
	}
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tail.String()
}

// stop ends the process with SIGTERM, and SIGKILL if it lingers 20 s.
// A process that exits with an error on SIGTERM is reported.
func (p *proc) stop() error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		if p.err != nil {
			return fmt.Errorf("bench: %s on SIGTERM: %v: %s", p.name, p.err, p.output())
		}
		return nil
	case <-time.After(20 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("bench: %s did not stop within 20s of SIGTERM", p.name)
	}
}

// alive reports an exit as an error.
func (p *proc) alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("bench: %s exited (%v): %s", p.name, p.err, p.output())
	default:
		return nil
	}
}

// rss returns the process's resident set now and at its peak, in bytes,
// from /proc (0, 0 where there is none).
func (p *proc) rss() (now, peak int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			now = n << 10
		case "VmHWM":
			peak = n << 10
		}
	}
	return now, peak
}

// servingAddr reads the address from `cairn serve`'s "serving" log line.
func servingAddr(line string) (string, bool) {
	var l struct{ Msg, Addr string }
	if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "serving" && l.Addr != "" {
		return "http://" + l.Addr, true
	}
	return "", false
}

// bucketLine reads the gs:// URL `cairn fake-gcs` prints.
func bucketLine(line string) (string, bool) {
	return line, strings.HasPrefix(line, "gs://")
}
