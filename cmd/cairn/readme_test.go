package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket"
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
		t.Logf("$ %s\n%s", c, firstLines(string(out), 3)) // the run as printed, under -v
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

	// The console's address, as the README gives it, shows the agent the
	// commands used, and through it the file they put.
	const console = "http://" + addr + "/ui/"
	if !strings.Contains(string(readme), "<"+console+">") {
		t.Fatalf("README does not give the console's address %s", console)
	}
	for _, page := range []struct{ path, want string }{
		{"", `href="/ui/a/default/"`},
		{"a/default/", `href="/ui/a/default/w/demo/"`},
		{"a/default/w/demo/f/outputs/hello.txt", "hello, cairn"},
	} {
		u := strings.ReplaceAll(console, addr, use) + page.path
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), page.want) {
			t.Errorf("%s: %s, without %q:\n%s", u, resp.Status, page.want, body)
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

// TestReadmeWalkthrough runs the rest of the README's "Run it" section as
// written, in one directory, with the built binary in place of
// `go run ./cmd/cairn`: the command-line calls, the change feed, an
// import, the pin commands (the copy served beside the first server),
// recovering a lost head and a conformance run. Only what a reader must
// fill in is filled in: <next_cursor> and NAME from the output before
// them, a ./data directory to import, and the lost head itself (deleted
// before the recover block, which is for that case). Lines that name a
// bucket on the Internet (example.net) and the long-running commands
// (--follow, fake-gcs, bench) are not run to the end: --follow and serve
// must still be running after a moment, and are stopped.
func TestReadmeWalkthrough(t *testing.T) {
	bin := cairnBinary(t)
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed: the README's commands cannot run as written")
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := shellBlocks(t, string(readme), "## Run it")
	dir := t.TempDir()
	env := processEnv()
	run := func(line string) (string, int) {
		t.Helper()
		cmd := exec.Command(bash, "-c", strings.ReplaceAll(line, "go run ./cmd/cairn", bin))
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		t.Logf("$ %s\n%s", line, firstLines(string(out), 3)) // the run as printed, under -v
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	must := func(line string) string {
		t.Helper()
		out, code := run(line)
		if code != 0 {
			t.Fatalf("%s\nexit %d: %s", line, code, out)
		}
		return out
	}
	block := func(marker string) []string {
		t.Helper()
		for _, b := range blocks {
			if strings.Contains(b, marker) {
				return shellCommands(b)
			}
		}
		t.Fatalf("README \"Run it\" has no block with %q", marker)
		return nil
	}

	// The command-line calls.
	for _, line := range block("workbench workbench_create") {
		out := must(line)
		if strings.Contains(line, "workbench_read") && !strings.Contains(out, "hello from the CLI") {
			t.Errorf("the CLI read shows %s", out)
		}
	}

	// The change feed: the first page, then following from its cursor.
	feed := block("changes --workbench")
	out := must(feed[0])
	var last struct {
		NextCursor string `json:"next_cursor"`
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.NextCursor == "" {
		t.Fatalf("the change feed's last line is not its cursor: %s", out)
	}
	follow := strings.ReplaceAll(feed[1], "<next_cursor>", last.NextCursor)
	if _, code := run("timeout 2 " + follow); code != 124 {
		t.Errorf("%s: exit %d, want it still following after 2s", follow, code)
	}

	// The import, of a directory the reader has.
	if err := os.MkdirAll(filepath.Join(dir, "data", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "data", "a.txt"), []byte("a\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "data", "sub", "b.bin"), []byte{0, 1, 2}, 0o644)
	for _, line := range block("import ./data") {
		must(line)
	}

	// The pins: NAME is the name create prints; the copy is served on a
	// free port in place of 7071 if that is taken.
	var name string
	for _, line := range block("pin create") {
		switch {
		case strings.Contains(line, "pin create"):
			var pin struct{ Name string }
			if err := json.Unmarshal([]byte(strings.TrimSpace(must(line))), &pin); err != nil || pin.Name == "" {
				t.Fatalf("pin create printed no pin: %v", err)
			}
			name = pin.Name
		case strings.Contains(line, " serve "):
			line = strings.ReplaceAll(line, "127.0.0.1:7071", freeAddr(t, "127.0.0.1:7071"))
			if _, code := run("timeout 3 " + line); code != 124 {
				t.Errorf("%s: exit %d, want it serving after 3s", line, code)
			}
		default:
			must(strings.ReplaceAll(line, "NAME", name))
		}
	}

	// A lost head: the recover block is for that case.
	b, err := bucket.Open(t.Context(), "file://"+filepath.Join(dir, defaultDataDir))
	if err != nil {
		t.Fatal(err)
	}
	objs, _, err := bucket.ListAll(t.Context(), b, bucket.ListOptions{Prefix: "shards/"})
	if err != nil {
		t.Fatal(err)
	}
	lost := 0
	for _, o := range objs {
		if strings.HasSuffix(o.Key, "/head") {
			if err := b.Delete(t.Context(), o.Key, bucket.Unconditional); err != nil {
				t.Fatal(err)
			}
			lost++
		}
	}
	b.Close()
	if lost != 1 {
		t.Fatalf("%d heads in ./%s", lost, defaultDataDir)
	}
	for _, line := range block("recover --dry-run") {
		must(line)
	}
	if out := must(`echo '{"id":"demo","section":"outputs","path":"from-cli.txt"}' | go run ./cmd/cairn workbench workbench_read`); !strings.Contains(out, "hello from the CLI") {
		t.Errorf("after recover the read shows %s", out)
	}

	// Conformance of the local bucket (the other line names a bucket on
	// the Internet).
	for _, line := range block("conformance") {
		if !strings.Contains(line, "example.net") {
			must(line)
		}
	}
}

// freeAddr returns addr when it can be listened on, else a free loopback
// address.
func freeAddr(t *testing.T, addr string) string {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
	}
	defer ln.Close()
	return ln.Addr().String()
}

// firstLines is s's first n lines, with a count of the lines left out.
func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) <= n {
		return strings.Join(lines, "\n")
	}
	return strings.Join(lines[:n], "\n") + fmt.Sprintf("\n… %d more lines", len(lines)-n)
}
