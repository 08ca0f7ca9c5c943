package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeQuickstart runs the README's "Run it" quickstart as written:
// the `go run ./cmd/cairn serve` line, with the built binary in place of
// `go run ./cmd/cairn`, in an empty directory, and then each curl command
// of the next block through bash. Every answer must be a success. When
// 127.0.0.1:7070 is taken (another server on the machine), the test
// replaces that address with a free one in the server's environment and
// in every command alike, and says so.
func TestReadmeQuickstart(t *testing.T) {
	bin := cairnBinary(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed: the quickstart's commands cannot run as written")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed: the quickstart's commands cannot run as written")
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := shellBlocks(t, string(readme), "## Run it")
	if len(blocks) < 2 {
		t.Fatalf("README \"Run it\" has %d sh blocks, want the serve line and the curl commands", len(blocks))
	}
	const goRun = "go run ./cmd/cairn "
	serveLine := strings.TrimSpace(blocks[0])
	if !strings.HasPrefix(serveLine, goRun+"serve") || strings.Contains(serveLine, "\n") {
		t.Fatalf("the quickstart's first block is %q, want one %q line", serveLine, goRun+"serve")
	}
	commands := shellCommands(blocks[1])
	var tools []string
	for _, c := range commands {
		if !strings.HasPrefix(c, "curl ") {
			t.Fatalf("the quickstart's second block runs %q, not curl", c)
		}
		i := strings.Index(c, "/tools/")
		if i < 0 {
			t.Fatalf("%q calls no tool", c)
		}
		tools = append(tools, strings.Fields(c[i+len("/tools/"):])[0])
	}
	if want := []string{"workbench_create", "workbench_put_file", "workbench_list", "workbench_read"}; strings.Join(tools, " ") != strings.Join(want, " ") {
		t.Fatalf("the quickstart calls %v, want %v", tools, want)
	}

	const addr = "127.0.0.1:7070"
	use := addr
	var env []string
	if ln, err := net.Listen("tcp", addr); err != nil {
		free, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		use = free.Addr().String()
		free.Close()
		env = []string{"CAIRN_ADDR=" + use}
		t.Logf("%s is taken: the server and every command use %s instead", addr, use)
	} else {
		ln.Close()
	}

	dir := t.TempDir()
	p := startServeProc(t, bin, dir, env, strings.Fields(strings.TrimPrefix(serveLine, goRun+"serve"))...)
	if p.base != "http://"+use {
		t.Fatalf("the server listens on %s, want %s", p.base, use)
	}
	if _, err := os.Stat(filepath.Join(dir, "cairn-data")); err != nil {
		t.Fatalf("./cairn-data was not created: %v", err)
	}
	for i, c := range commands {
		c = strings.ReplaceAll(c, addr, use)
		cmd := exec.Command(bash, "-c", c)
		cmd.Dir = dir
		cmd.Env = processEnv()
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v: %s", c, err, out)
		}
		var res map[string]any
		if err := json.Unmarshal(out, &res); err != nil || res["status"] != "success" {
			t.Fatalf("%s answered %s", c, out)
		}
		switch tools[i] {
		case "workbench_list":
			if !strings.Contains(string(out), `"hello.txt"`) {
				t.Errorf("the list does not show hello.txt: %s", out)
			}
		case "workbench_read":
			if !strings.Contains(string(out), `"value":"hello, cairn"`) {
				t.Errorf("the read does not show the text put: %s", out)
			}
		}
	}
}

// shellBlocks returns the bodies of the ```sh blocks of a Markdown
// document's section whose heading line is heading, up to the next
// heading of the same level.
func shellBlocks(t *testing.T, doc, heading string) []string {
	t.Helper()
	start := strings.Index(doc, "\n"+heading+"\n")
	if start < 0 {
		t.Fatalf("README has no %q section", heading)
	}
	section := doc[start+len(heading)+2:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var blocks []string
	for {
		i := strings.Index(section, "```sh\n")
		if i < 0 {
			return blocks
		}
		section = section[i+len("```sh\n"):]
		j := strings.Index(section, "```")
		if j < 0 {
			t.Fatal(fmt.Errorf("an unclosed sh block in %q", heading))
		}
		blocks = append(blocks, section[:j])
		section = section[j+3:]
	}
}

// shellCommands splits a block into commands, keeping with each line the
// lines its trailing backslash continues, as written.
func shellCommands(block string) []string {
	var cmds []string
	var cur strings.Builder
	for line := range strings.SplitSeq(block, "\n") {
		if strings.HasSuffix(line, `\`) {
			cur.WriteString(line + "\n") // bash joins them itself
			continue
		}
		cur.WriteString(line)
		if c := strings.TrimSpace(cur.String()); c != "" {
			cmds = append(cmds, c)
		}
		cur.Reset()
	}
	return cmds
}
