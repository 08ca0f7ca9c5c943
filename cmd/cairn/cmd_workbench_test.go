package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/workbench"
)

// runWith runs the command line in-process with stdin.
func runWith(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), &env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errOut}, args)
	return code, out.String(), errOut.String()
}

// decodeLine checks that out is one line of JSON and decodes it.
func decodeLine(t *testing.T, out string) map[string]any {
	t.Helper()
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
		t.Fatalf("output is not one line: %q", out)
	}
	var m map[string]any
	d := json.NewDecoder(strings.NewReader(out))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatalf("output is not JSON: %v: %q", err, out)
	}
	// The line is the canonical encoding: sorted keys, compact.
	canon, err := workbench.MarshalResult(m)
	if err != nil || string(canon)+"\n" != out {
		t.Fatalf("output is not canonical:\n got %q\nwant %q", out, canon)
	}
	return m
}

func TestWorkbenchCommand(t *testing.T) {
	// A fresh memory bucket name per run: mem:// names are shared by the
	// whole process, and -count runs the test again in it.
	memURL := fmt.Sprintf("mem://workbench-cmd-%d", time.Now().UnixNano())
	for _, url := range []string{memURL, "file://" + t.TempDir()} {
		t.Run(url[:4], func(t *testing.T) {
			wb := func(stdin, tool string, extra ...string) (int, map[string]any, string) {
				t.Helper()
				args := append([]string{"workbench", "--bucket", url, "--agent", "cli"}, extra...)
				args = append(args, tool)
				code, out, errOut := runWith(t, stdin, args...)
				if out == "" {
					t.Fatalf("%s: no output (exit %d): %s", tool, code, errOut)
				}
				return code, decodeLine(t, out), errOut
			}
			code, r, _ := wb(`{"id":"wb1"}`, "workbench_create")
			if code != 0 || r["status"] != "success" || r["path"] != "/agents/cli/wb/wb1" {
				t.Fatalf("create: exit %d, %v", code, r)
			}
			code, r, _ = wb(`{"id":"wb1","section":"outputs","path":"a/report.txt","text":"one\ntwo\n"}`, "workbench_put_file")
			if code != 0 || r["generation"] != json.Number("1") || r["size_bytes"] != json.Number("8") {
				t.Fatalf("put: exit %d, %v", code, r)
			}
			code, r, _ = wb(`{"id":"wb1","section":"outputs"}`, "workbench_list")
			if code != 0 || r["entry_count"] != json.Number("1") {
				t.Fatalf("list: exit %d, %v", code, r)
			}
			if e := r["entries"].([]any)[0].(map[string]any); e["name"] != "a" || e["kind"] != "directory" {
				t.Fatalf("list entry %v", e)
			}
			code, r, _ = wb(`{"id":"wb1","section":"outputs","path":"a/report.txt"}`, "workbench_read")
			if code != 0 || r["record_count"] != json.Number("2") || r["record_type"] != "text_lines" {
				t.Fatalf("read: exit %d, %v", code, r)
			}
			// The input may come from a file, and flags may follow the tool.
			in := filepath.Join(t.TempDir(), "stat.json")
			if err := os.WriteFile(in, []byte(`{"id":"wb1","section":"outputs","path":"a/report.txt"}`), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := runWith(t, "", "workbench", "--bucket", url, "workbench_stat", "--agent", "cli", "--input", in)
			r = decodeLine(t, out)
			if card, _ := r["card"].(map[string]any); code != 0 || card["kind"] != "file" || card["generation"] != json.Number("1") {
				t.Fatalf("stat: exit %d, %v %s", code, r, errOut)
			}
			// An error result is printed and exits 1.
			code, r, _ = wb(`{"id":"wb1","section":"outputs","path":"missing.txt"}`, "workbench_stat")
			if code != 1 || r["status"] != "error" || r["code"] != "NotFound" {
				t.Fatalf("missing stat: exit %d, %v", code, r)
			}
			code, r, _ = wb(`{"id":`, "workbench_stat")
			if code != 1 || r["code"] != "InvalidArguments" {
				t.Fatalf("bad JSON: exit %d, %v", code, r)
			}
			// Another agent has its own root, whose store nothing has
			// written yet: it reads as empty, and once the agent writes,
			// its own root is still empty of wb1.
			code, out, _ = runWith(t, `{"id":"wb1"}`, "workbench", "--bucket", url, "--agent", "other", "workbench_stat")
			if r := decodeLine(t, out); code != 1 || r["code"] != "NotFound" {
				t.Fatalf("other agent before its first write: exit %d, %v", code, r)
			}
			if code, out, _ = runWith(t, `{"id":"wb2"}`, "workbench", "--bucket", url, "--agent", "other", "workbench_create"); code != 0 {
				t.Fatalf("other agent create: exit %d, %s", code, out)
			}
			code, out, _ = runWith(t, `{"id":"wb1"}`, "workbench", "--bucket", url, "--agent", "other", "workbench_stat")
			if r := decodeLine(t, out); code != 1 || r["code"] != "NotFound" {
				t.Fatalf("other agent: exit %d, %v", code, r)
			}
		})
	}
}

// With no --bucket the command keeps its data in ./cairn-data.
func TestWorkbenchCommandDefaultBucket(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	code, out, errOut := runWith(t, `{"id":"here","section":"logs","path":"x.log","text":"x"}`, "workbench", "workbench_put_file")
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	if st, err := os.Stat(filepath.Join(dir, defaultDataDir)); err != nil || !st.IsDir() {
		t.Fatalf("no data directory: %v", err)
	}
	// The default agent is "default".
	code, out, _ = runWith(t, `{"id":"here"}`, "workbench", "workbench_stat")
	if r := decodeLine(t, out); code != 0 || r["path"] != "/agents/default/wb/here" {
		t.Fatalf("stat: exit %d, %v", code, r)
	}
	// Empty input is {}: the schema, not the JSON parser, refuses it.
	code, out, _ = runWith(t, "  \n", "workbench", "workbench_stat")
	r := decodeLine(t, out)
	if msg, _ := r["message"].(string); code != 1 || r["code"] != "InvalidArguments" || strings.Contains(msg, "not valid JSON") {
		t.Fatalf("empty input: exit %d, %v", code, r)
	}
}

func TestWorkbenchCommandUsage(t *testing.T) {
	for _, args := range [][]string{
		{"workbench"},
		{"workbench", "--bogus", "workbench_stat"},
		{"workbench", "workbench_stat", "extra"},
		{"workbench", "--bucket", "nope://x", "workbench_stat"},
		{"workbench", "--bucket", "mem://usage", "--agent", "a/b", "workbench_stat"},
		{"workbench", "--input", filepath.Join(t.TempDir(), "missing.json"), "--bucket", "mem://usage", "workbench_stat"},
		// An empty id or URL is a mistake, never the default.
		{"workbench", "--bucket", "mem://usage", "--agent", "", "workbench_stat"},
		{"workbench", "--bucket", "mem://usage", "workbench_stat", "--agent="},
		{"workbench", "--bucket", "", "workbench_stat"},
		{"workbench", "--bucket", "mem://usage", "--input", "", "workbench_stat"},
	} {
		code, out, errOut := runWith(t, `{"id":"x"}`, args...)
		if code != 2 || out != "" || errOut == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}

// An unknown tool name is the UnknownTool error envelope on standard
// output, exit 1, before any bucket is opened; not a usage error.
func TestWorkbenchCommandUnknownTool(t *testing.T) {
	for _, tool := range []string{"workbench_nope", "stat", "WORKBENCH_STAT"} {
		code, out, _ := runWith(t, `{"id":"x"}`, "workbench", "--bucket", "nope://x", tool)
		if code != 1 {
			t.Fatalf("%s: exit %d, want 1", tool, code)
		}
		m := decodeLine(t, out)
		details, _ := m["details"].(map[string]any)
		if m["status"] != "error" || m["code"] != "UnknownTool" || m["retryable"] != false || len(details) != 1 || details["tool"] != tool {
			t.Fatalf("%s: %v", tool, m)
		}
		if msg, _ := m["message"].(string); msg == "" {
			t.Fatalf("%s: empty message", tool)
		}
	}
}

// longInput is an input of n bytes, "{" then spaces, that counts what was
// read from it.
type longInput struct{ n, read int64 }

func (r *longInput) Read(p []byte) (int, error) {
	if r.read == r.n {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.n-r.read)]
	for i := range p {
		p[i] = ' '
	}
	if r.read == 0 && len(p) > 0 {
		p[0] = '{'
	}
	r.read += int64(len(p))
	return len(p), nil
}

// TestWorkbenchCommandRefusesLargeInput: an input longer than
// MaxInputBytes is the PayloadTooLarge result (exit 1), refused after one
// byte more than the limit was read: the rest is never read, and no bucket
// is opened. From a file, whose size is known, nothing is read and the
// size is exact.
func TestWorkbenchCommandRefusesLargeInput(t *testing.T) {
	limit := workbench.MaxInputBytes("workbench_put_file", workbench.DefaultMaxBytes)
	in := &longInput{n: limit + 64<<20}
	var out, errOut bytes.Buffer
	code := run(context.Background(), &env{stdin: in, stdout: &out, stderr: &errOut},
		[]string{"workbench", "--bucket", "mem://never-opened", "workbench_put_file"})
	if code != exitFailed {
		t.Fatalf("exit %d, want %d: %s", code, exitFailed, errOut.String())
	}
	r := decodeLine(t, out.String())
	d, _ := r["details"].(map[string]any)
	if r["code"] != "PayloadTooLarge" || d["actual_bytes"] != json.Number(fmt.Sprint(limit+1)) || d["maximum_bytes"] != json.Number(fmt.Sprint(limit)) ||
		r["message"] != fmt.Sprintf("tool input is at least %d bytes, maximum is %d", limit+1, limit) {
		t.Fatalf("result %v", r)
	}
	if in.read != limit+1 {
		t.Fatalf("read %d bytes of the input, limit %d", in.read, limit)
	}

	big := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(big, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 400<<20); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runWith(t, "", "workbench", "--bucket", "mem://never-opened", "--input", big, "workbench_put_file")
	r = decodeLine(t, stdout)
	d, _ = r["details"].(map[string]any)
	if code != exitFailed || r["code"] != "PayloadTooLarge" || d["actual_bytes"] != json.Number(fmt.Sprint(400<<20)) ||
		r["message"] != fmt.Sprintf("tool input is %d bytes, maximum is %d", 400<<20, limit) {
		t.Fatalf("exit %d, result %v, %s", code, r, stderr)
	}
}
