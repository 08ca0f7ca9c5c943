package main

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestHelpDoesNothing: asking any command for its help prints its usage,
// exits 0, and does nothing else. `cairn gc --help` once went on to
// sweep the default bucket, making ./cairn-data to do it.
func TestHelpDoesNothing(t *testing.T) {
	for _, v := range []string{"CAIRN_BUCKET", "CAIRN_CONFIG", "CAIRN_ADDR", "CAIRN_TOKENS"} {
		t.Setenv(v, "")
	}
	var calls [][]string
	verbs := make([]string, 0, len(commands))
	for v := range commands {
		verbs = append(verbs, v)
	}
	slices.Sort(verbs)
	for _, v := range verbs {
		calls = append(calls, []string{v, "--help"}, []string{"help", v}, []string{v, "-h"})
	}
	for _, sub := range []string{"create", "verify", "copy", "restore", "delete", "list"} {
		calls = append(calls, []string{"pin", sub, "--help"})
	}
	for _, args := range calls {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			var out, errOut bytes.Buffer
			if code := run(t.Context(), &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut}, args); code != exitOK {
				t.Fatalf("exit %d; stderr:\n%s", code, errOut.String())
			}
			if !strings.Contains(strings.ToLower(out.String()+errOut.String()), "usage") {
				t.Errorf("no usage printed:\n%s%s", out.String(), errOut.String())
			}
			if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
				t.Errorf("help left %v in its directory (%v)", ents, err)
			}
		})
	}
}
