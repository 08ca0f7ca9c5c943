package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/workbench"
)

// importTree writes a small tree under a new directory and returns it with
// the files the import must store, by relative path.
func importTree(t *testing.T) (string, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	want := map[string][]byte{
		"a.txt":                []byte("hello\n"),
		"nested/deeper/b.json": []byte(`{"x":1}`),
		"bin.dat":              {0xff, 0x00, 0x80, 'z'},
		"empty.txt":            {},
	}
	for rel, body := range want {
		write(t, filepath.Join(dir, rel), body)
	}
	// The Workbench refuses a backslash in a name.
	write(t, filepath.Join(dir, `bad\name.txt`), []byte("x"))
	// A body one byte over the limit; sparse, so never written out.
	big := filepath.Join(dir, "big.bin")
	write(t, big, nil)
	if err := os.Truncate(big, workbench.DefaultMaxBytes+1); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	// An empty directory has no file to import.
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, want
}

func write(t *testing.T, path string, body []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestImportCommand(t *testing.T) {
	// A fresh memory bucket name per run: mem:// names are shared by the
	// whole process, and -count runs the test again in it.
	memURL := fmt.Sprintf("mem://import-cmd-%d", time.Now().UnixNano())
	for _, url := range []string{memURL, "file://" + t.TempDir()} {
		t.Run(url[:4], func(t *testing.T) {
			dir, want := importTree(t)
			imp := func(extra ...string) (int, string) {
				t.Helper()
				args := append([]string{"import", "--bucket", url, "--agent", "cli", "--quiet"}, extra...)
				code, out, errOut := runWith(t, "", args...)
				if errOut != "" {
					t.Errorf("import %v: stderr %q", extra, errOut)
				}
				return code, out
			}
			tool := func(name, input string) map[string]any {
				t.Helper()
				code, out, errOut := runWith(t, input, "workbench", "--bucket", url, "--agent", "cli", name)
				if code != 0 {
					t.Fatalf("%s %s: exit %d: %s %s", name, input, code, out, errOut)
				}
				return decodeLine(t, out)
			}
			read := func(rel string) ([]byte, json.Number) {
				t.Helper()
				in, _ := json.Marshal(map[string]any{"id": "wb1", "section": "outputs", "path": rel, "format": "bytes", "limit": 300})
				r := tool("workbench_read", string(in))
				got, err := base64.StdEncoding.DecodeString(r["bytes"].(string))
				if err != nil {
					t.Fatal(err)
				}
				return got, r["generation"].(json.Number)
			}
			lines := func(out string) []string {
				var l []string
				for _, s := range strings.Split(out, "\n") {
					if strings.HasPrefix(s, "refused") || strings.HasPrefix(s, "skipped") || strings.HasPrefix(s, "failed") || strings.HasPrefix(s, "exists") {
						l = append(l, s)
					}
				}
				return l
			}

			// Flags may follow DIR. A refused file makes the exit 1; the
			// others are imported all the same.
			code, out := imp(dir, "--workbench", "wb1", "--section", "outputs")
			if code != 1 {
				t.Fatalf("first import: exit %d\n%s", code, out)
			}
			if got, want := lines(out), []string{
				`refused  bad\name.txt: InvalidArguments: relative path component 0 contains backslash`,
				"refused  big.bin: PayloadTooLarge: 16777217 bytes, over the 16777216-byte body limit",
				"skipped  link: symbolic link, not followed",
			}; !slices.Equal(got, want) {
				t.Fatalf("first import reported\n%q\nwant\n%q", got, want)
			}
			if !strings.Contains(out, "files:     4 imported (4 new, 0 replaced), 0 existing, 1 skipped, 2 refused, 0 failed, 0 not tried; 7 in all\n") ||
				!strings.Contains(out, "bytes:     17 B imported (17 bytes)\n") {
				t.Fatalf("first import summary:\n%s", out)
			}
			for rel, body := range want {
				if got, gen := read(rel); string(got) != string(body) || gen != "1" {
					t.Errorf("%s: read %q generation %s, want %q generation 1", rel, got, gen, body)
				}
			}
			r := tool("workbench_list", `{"id":"wb1","section":"outputs"}`)
			var names []string
			for _, e := range r["entries"].([]any) {
				names = append(names, e.(map[string]any)["name"].(string))
			}
			if want := []string{"a.txt", "bin.dat", "empty.txt", "nested"}; !slices.Equal(names, want) {
				t.Fatalf("list: %q, want %q", names, want)
			}

			// Again without --replace: existing paths are left as they
			// are; --keep-going makes the refusals no failure.
			write(t, filepath.Join(dir, "a.txt"), []byte("changed\n"))
			write(t, filepath.Join(dir, "new.txt"), []byte("new\n"))
			code, out = imp("--workbench", "wb1", "--section", "outputs", "--keep-going", dir)
			if code != 0 || !strings.Contains(out, "files:     1 imported (1 new, 0 replaced), 4 existing, 1 skipped, 2 refused") ||
				!strings.Contains(out, "exists   a.txt\n") {
				t.Fatalf("second import: exit %d\n%s", code, out)
			}
			if got, gen := read("a.txt"); string(got) != "hello\n" || gen != "1" {
				t.Fatalf("a.txt after a re-import: %q generation %s", got, gen)
			}

			// With --replace every existing path is overwritten.
			code, out = imp("--workbench", "wb1", "--section", "outputs", "--keep-going", "--replace", dir)
			if code != 0 || !strings.Contains(out, "files:     5 imported (0 new, 5 replaced), 0 existing") {
				t.Fatalf("replacing import: exit %d\n%s", code, out)
			}
			if got, gen := read("a.txt"); string(got) != "changed\n" || gen != "2" {
				t.Fatalf("a.txt after --replace: %q generation %s", got, gen)
			}
			if got, gen := read("bin.dat"); string(got) != string(want["bin.dat"]) || gen != "2" {
				t.Fatalf("bin.dat after --replace: %q generation %s", got, gen)
			}

			// The import folded its commits' deltas before it ended.
			b, _, _, err := openBucket(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			svc, err := workbench.Open(context.Background(), b, workbench.Options{AgentID: "cli"})
			if err != nil {
				t.Fatal(err)
			}
			defer svc.Close()
			sn, err := svc.Store().Pin(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if n := len(sn.Root().Deltas); n != 0 {
				t.Fatalf("after the imports the root lists %d delta segments, want none", n)
			}
		})
	}
}

// The section defaults to input, and a tree with nothing to refuse exits 0.
func TestImportCommandDefaults(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "x/y.txt"), []byte("y"))
	url := fmt.Sprintf("mem://import-defaults-%d", time.Now().UnixNano())
	code, out, errOut := runWith(t, "", "import", "--bucket", url, "--workbench", "w", dir)
	if code != 0 || !strings.Contains(out, "workbench: /agents/default/wb/w section input\n") || !strings.Contains(out, "files:     1 imported") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	// stderr is no terminal: plain lines every 5 s, none in a short run.
	if errOut != "" {
		t.Fatalf("stderr %q", errOut)
	}
	code, out, _ = runWith(t, `{"id":"w","section":"input","path":"x/y.txt"}`, "workbench", "--bucket", url, "workbench_stat")
	if code != 0 {
		t.Fatalf("stat: exit %d: %s", code, out)
	}
}

func TestImportCommandUsage(t *testing.T) {
	t.Chdir(t.TempDir()) // no ./cairn-data left behind by a default bucket
	dir := t.TempDir()
	file := filepath.Join(dir, "f.txt")
	write(t, file, []byte("f"))
	mem := "mem://import-usage"
	for _, args := range [][]string{
		{"import"},
		{"import", "--workbench", "w"},
		{"import", dir},
		{"import", dir, dir, "--workbench", "w"},
		{"import", filepath.Join(dir, "missing"), "--workbench", "w", "--bucket", mem},
		{"import", file, "--workbench", "w", "--bucket", mem},
		{"import", dir, "--workbench", "w", "--section", "nope", "--bucket", mem},
		{"import", dir, "--workbench", "w", "--parallel", "0", "--bucket", mem},
		{"import", dir, "--workbench", "w", "--parallel", "9223372036854775807", "--bucket", mem},
		{"import", dir, "--workbench", "w", "--commit-interval", "-1s", "--bucket", mem},
		{"import", dir, "--workbench", "w", "--commit-interval", "2562047h", "--bucket", mem},
		{"import", dir, "--workbench", "bad.id", "--bucket", mem},
		{"import", dir, "--workbench", "w", "--agent", "a/b", "--bucket", mem},
		{"import", dir, "--workbench", "w", "--bucket", "nope://x"},
		{"import", "--bogus", dir, "--workbench", "w"},
		{"import", dir, "--workbench", "", "--bucket", mem},
		{"import", dir, "--workbench", "w", "--agent", "", "--bucket", mem},
		{"import", dir, "--workbench", "w", "--section", "", "--bucket", mem},
		{"import", dir, "--workbench", "w", "--bucket", ""},
	} {
		code, out, errOut := runWith(t, "", args...)
		if code != 2 || out != "" || errOut == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}

// TestImportFoldsWithoutMerging: an import's engine folds its deltas into
// the base and never merges them into larger deltas, which would copy
// every new file's body again. 40 puts one after another are 40 commits,
// past the import's 32 deltas.
func TestImportFoldsWithoutMerging(t *testing.T) {
	ctx := t.Context()
	var out, errOut bytes.Buffer
	s, b, code := openImport(ctx, &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut}, "file://"+t.TempDir(), "imp", 0)
	if s == nil {
		t.Fatalf("open: exit %d: %s", code, errOut.String())
	}
	defer b.Close()
	defer s.Close()
	if out, ok := s.Call(ctx, "workbench_create", []byte(`{"id":"w"}`)); !ok {
		t.Fatalf("create: %s", out)
	}
	for i := range 40 {
		in := fmt.Sprintf(`{"id":"w","section":"input","path":"f%02d.txt","text":"body %d"}`, i, i)
		if out, ok := s.Call(ctx, "workbench_put_file", []byte(in)); !ok {
			t.Fatalf("put %d: %s", i, out)
		}
	}
	if err := s.Store().Fold(ctx); err != nil {
		t.Fatal(err)
	}
	st := s.Store().CommitStats()
	if st.Merges != 0 || st.Folds == 0 {
		t.Fatalf("%d merges and %d folds, want none and some", st.Merges, st.Folds)
	}
}
