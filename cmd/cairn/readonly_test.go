package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// dirTree lists every path under dir (directories end in /) with the
// contents of each file.
func dirTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReadOnlyCommandsChangeNothing: the commands that only read, pointed
// at a local-file bucket, leave its directory exactly as it was: no lock
// directory or lock file, no probe, no temporary file, nothing removed.
func TestReadOnlyCommandsChangeNothing(t *testing.T) {
	dir := t.TempDir()
	url := "file://" + dir
	wb := func(tool, input string) string {
		t.Helper()
		code, out, errOut := runWith(t, input, "workbench", "--bucket", url, "--agent", "ro", tool)
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s %s", tool, code, out, errOut)
		}
		return out
	}
	wb("workbench_create", `{"id":"wb"}`)
	wb("workbench_put_file", `{"id":"wb","section":"outputs","path":"a.txt","text":"one\n"}`)
	wb("workbench_put_file", `{"id":"wb","section":"outputs","path":"big.txt","text":"`+strings.Repeat("block ", 2000)+`"}`)
	if code, _, errOut := runWith(t, "", "pin", "create", "--bucket", url, "--agent", "ro", "--name", "p"); code != exitOK {
		t.Fatalf("pin create: %s", errOut)
	}
	// A stale temporary file of a write that died: only gc removes it.
	tmp := filepath.Join(dir, ".tmp-dead")
	if err := os.WriteFile(tmp, []byte("half a write"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(tmp, old, old); err != nil {
		t.Fatal(err)
	}
	// As a copy of the directory without its lock files would be.
	if err := os.RemoveAll(filepath.Join(dir, ".locks")); err != nil {
		t.Fatal(err)
	}
	before := dirTree(t, dir)

	for _, args := range [][]string{
		{"workbench", "--bucket", url, "--agent", "ro", "workbench_read"},
		{"workbench", "--bucket", url, "--agent", "ro", "workbench_list"},
		{"workbench", "--bucket", url, "--agent", "ro", "workbench_stat"},
		{"workbench", "--bucket", url, "--agent", "ro", "workbench_read"}, // a missing path
		{"fsck", "--bucket", url, "--agent", "ro"},
		{"pin", "list", "--bucket", url, "--agent", "ro"},
		{"pin", "verify", "--all", "--bucket", url, "--agent", "ro"},
		{"gc", "--bucket", url, "--agent", "ro", "--dry-run"},
		{"gc", "--bucket", url, "--agent", "ro", "--dry-run", "--revisions"},
		{"changes", "--bucket", url, "--agent", "ro", "--workbench", "wb"},
	} {
		input := ""
		switch args[len(args)-1] {
		case "workbench_read":
			input = `{"id":"wb","section":"outputs","path":"big.txt"}`
		case "workbench_list":
			input = `{"id":"wb","section":"outputs"}`
		case "workbench_stat":
			input = `{"id":"wb","section":"outputs","path":"a.txt"}`
		}
		code, out, errOut := runWith(t, input, args...)
		if code != exitOK {
			t.Fatalf("cairn %s: exit %d: %s %s", strings.Join(args, " "), code, out, errOut)
		}
		after := dirTree(t, dir)
		for p := range after {
			if _, ok := before[p]; !ok {
				t.Errorf("cairn %s created %s", strings.Join(args, " "), p)
			}
		}
		for p, v := range before {
			if w, ok := after[p]; !ok {
				t.Errorf("cairn %s removed %s", strings.Join(args, " "), p)
			} else if w != v {
				t.Errorf("cairn %s changed %s", strings.Join(args, " "), p)
			}
		}
		if t.Failed() {
			return
		}
	}
	t.Logf("%d paths unchanged by 10 read-only commands", len(before))
}

// TestGCRemovesDeadWritersTemporaryFiles: cairn gc removes the temporary
// files of interrupted writes once older than the grace, keeps younger
// ones, and says how many; a dry run only counts them.
func TestGCRemovesDeadWritersTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	url := "file://" + dir
	if code, out, errOut := runWith(t, `{"id":"wb"}`, "workbench", "--bucket", url, "--agent", "tmp", "workbench_create"); code != exitOK {
		t.Fatalf("create: %s %s", out, errOut)
	}
	write := func(name string, age time.Duration) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("half a write"), 0o644); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dead := []string{write(".tmp-dead1", 3*time.Hour), write(".tmp-dead2", 2*time.Hour)}
	young := write(".tmp-young", time.Minute)

	code, out, errOut := runWith(t, "", "gc", "--bucket", url, "--agent", "tmp", "--dry-run")
	if code != exitOK || !strings.Contains(out, "temporary files of interrupted writes older than 1h0m0s: would remove 2\n") {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	for _, p := range append(dead, young) {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("a dry run removed %s", p)
		}
	}
	code, out, errOut = runWith(t, "", "gc", "--bucket", url, "--agent", "tmp", "--json")
	if code != exitOK || !strings.Contains(out, `{"temporary_files_removed":2,"dry_run":false}`) {
		t.Fatalf("gc: exit %d\n%s%s", code, out, errOut)
	}
	for _, p := range dead {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s kept", p)
		}
	}
	if _, err := os.Stat(young); err != nil {
		t.Errorf("a temporary file younger than the grace was removed: %v", err)
	}
}
