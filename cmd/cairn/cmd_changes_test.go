package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer that a command writes while a test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// feedLines splits the output of cairn changes into event lines and the
// cursor lines, each decoded.
func feedLines(t *testing.T, out string) (events, cursors []map[string]any) {
	t.Helper()
	for _, line := range strings.SplitAfter(out, "\n") {
		if line == "" {
			continue
		}
		m := decodeLine(t, line)
		if _, ok := m["kind"]; ok {
			events = append(events, m)
		} else {
			cursors = append(cursors, m)
		}
	}
	return events, cursors
}

func TestChangesCommand(t *testing.T) {
	url := fmt.Sprintf("mem://changes-cmd-%d", time.Now().UnixNano())
	for i := 0; i < 3; i++ {
		in := fmt.Sprintf(`{"id":"wb1","section":"outputs","path":"f%d.txt","text":"x"}`, i)
		if code, out, errOut := runWith(t, in, "workbench", "--bucket", url, "--agent", "cli", "workbench_put_file"); code != 0 {
			t.Fatalf("put: exit %d %s %s", code, out, errOut)
		}
	}
	changes := func(args ...string) (int, string) {
		t.Helper()
		code, out, _ := runWith(t, "", append([]string{"changes", "--bucket", url, "--agent", "cli"}, args...)...)
		return code, out
	}
	code, out := changes("--limit", "2")
	evs, curs := feedLines(t, out)
	if code != 0 || len(evs) != 2 || len(curs) != 1 || !strings.HasSuffix(out, "}\n") {
		t.Fatalf("first page: exit %d\n%s", code, out)
	}
	if evs[0]["kind"] != "WorkspaceCreated" || evs[1]["path"] != "outputs/f0.txt" || curs[0]["caught_up"] != false {
		t.Fatalf("first page:\n%s", out)
	}
	// The last line is the cursor; the rest follows from it.
	code, out = changes("--cursor", curs[0]["next_cursor"].(string))
	evs2, curs2 := feedLines(t, out)
	if code != 0 || len(evs2) != 2 || evs2[1]["path"] != "outputs/f2.txt" || curs2[0]["caught_up"] != true {
		t.Fatalf("second page: exit %d\n%s", code, out)
	}
	if code, out = changes("--workbench", "wb2"); code != 0 || !strings.HasPrefix(out, `{"caught_up":true,"next_cursor":`) {
		t.Fatalf("empty scope: exit %d\n%s", code, out)
	}
	// A cursor of another scope, or a tampered one, is the error envelope.
	code, out = changes("--workbench", "wb1", "--cursor", curs[0]["next_cursor"].(string))
	if m := decodeLine(t, out); code != 1 || m["code"] != "InvalidState" {
		t.Fatalf("foreign cursor: exit %d\n%s", code, out)
	}
	code, out = changes("--cursor", "x"+curs[0]["next_cursor"].(string))
	if m := decodeLine(t, out); code != 1 || m["message"] != "cursor is malformed" {
		t.Fatalf("tampered cursor: exit %d\n%s", code, out)
	}
	code, out = changes("--after", "99999")
	if m := decodeLine(t, out); code != 1 || m["code"] != "InvalidState" {
		t.Fatalf("--after past the head: exit %d\n%s", code, out)
	}
	for _, bad := range [][]string{{"--limit", "0"}, {"--limit", "1001"}, {"--after", "-1"}, {"--cursor", ""}, {"extra"}, {"--interval", "0s"}} {
		if code, out := changes(bad...); code != 2 || out != "" {
			t.Fatalf("%v: exit %d, output %q, want usage error", bad, code, out)
		}
	}
}

func TestChangesCommandFollow(t *testing.T) {
	url := fmt.Sprintf("mem://changes-follow-%d", time.Now().UnixNano())
	put := func(name string) {
		in := fmt.Sprintf(`{"id":"wb1","section":"outputs","path":%q,"text":"x"}`, name)
		if code, out, _ := runWith(t, in, "workbench", "--bucket", url, "--agent", "cli", "workbench_put_file"); code != 0 {
			t.Fatalf("put: exit %d %s", code, out)
		}
	}
	put("a.txt")
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut lockedBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut},
			[]string{"changes", "--bucket", url, "--agent", "cli", "--follow", "--interval", "10ms"})
	}()
	// The follower prints a's events, then b's once it is written.
	waitFor := func(s string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !strings.Contains(out.String(), s); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("follow never printed %s:\n%s", s, out.String())
			}
		}
	}
	waitFor("outputs/a.txt")
	put("b.txt")
	waitFor("outputs/b.txt")
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("follow: exit %d: %s", code, errOut.String())
	}
	evs, curs := feedLines(t, out.String())
	if len(evs) != 3 || evs[2]["path"] != "outputs/b.txt" {
		t.Fatalf("follow printed %d events:\n%s", len(evs), out.String())
	}
	var last map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(out.String()[strings.LastIndex(strings.TrimSpace(out.String()), "\n")+1:])), &last); err != nil || last["next_cursor"] == nil {
		t.Fatalf("follow did not end with a cursor line:\n%s", out.String())
	}
	if len(curs) < 2 {
		t.Fatalf("follow printed %d cursor lines, want one per page with events and a last one", len(curs))
	}
}
