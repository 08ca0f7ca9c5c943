package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// everyFlagSet runs every command (and every pin verb) with --help and
// returns the FlagSets they parse, by name.
func everyFlagSet(t *testing.T) map[string]*flag.FlagSet {
	t.Helper()
	sets := map[string]*flag.FlagSet{}
	flagSetHook = func(fs *flag.FlagSet) { sets[fs.Name()] = fs }
	defer func() { flagSetHook = nil }()
	var cmds [][]string
	for verb := range commands {
		cmds = append(cmds, []string{verb, "--help"})
	}
	for _, verb := range pinVerbs {
		cmds = append(cmds, []string{"pin", verb, "--help"})
	}
	for _, args := range cmds {
		e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
		if code := run(context.Background(), e, args); code != exitOK {
			t.Errorf("cairn %s exits %d, want 0", strings.Join(args, " "), code)
		}
	}
	return sets
}

// TestEverySettingHasItsKey walks every command's flags: each is a key
// configKeys accepts, each key is some command's flag (or serve's
// agents), and each flag takes its value from its environment variable
// and, failing that, from the config file.
func TestEverySettingHasItsKey(t *testing.T) {
	sets := everyFlagSet(t)
	if len(sets) < len(commands) {
		t.Fatalf("%d flag sets for %d commands", len(sets), len(commands))
	}
	keys := map[string]bool{"agents": true}
	names := make([]string, 0, len(sets))
	for name := range sets {
		names = append(names, name)
	}
	sort.Strings(names)
	nflags := 0
	for _, name := range names {
		sets[name].VisitAll(func(f *flag.Flag) {
			nflags++
			keys[configKey(f.Name)] = true
			if !slices.Contains(configKeys, configKey(f.Name)) {
				t.Errorf("cairn %s --%s: config key %s is not in configKeys", name, f.Name, configKey(f.Name))
			}
		})
	}
	for _, k := range configKeys {
		if !keys[k] {
			t.Errorf("configKeys holds %q, which no command's flag has", k)
		}
	}
	t.Logf("%d commands and pin verbs (%s), %d flags, %d config keys", len(sets), strings.Join(names, ", "), nflags, len(configKeys))

	// Each flag of each command takes its variable, then its key.
	for _, name := range names {
		sets[name].VisitAll(func(f *flag.Flag) {
			if f.Name == "config" {
				return // names the file itself
			}
			v := sampleValue(f)
			fresh := func() *flag.FlagSet {
				fs := flag.NewFlagSet(name, flag.ContinueOnError)
				fs.SetOutput(io.Discard)
				fs.Var(f.Value, f.Name, f.Usage)
				return fs
			}
			e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}

			t.Setenv(envName(f.Name), v)
			fs := fresh()
			s, _, done := parseFlags(e, fs, nil)
			if done || s.from(f.Name) != fromEnv {
				t.Errorf("cairn %s: %s=%s did not set --%s", name, envName(f.Name), v, f.Name)
			}
			os.Unsetenv(envName(f.Name))

			cfg := filepath.Join(t.TempDir(), "cairn.yaml")
			if err := os.WriteFile(cfg, []byte(configKey(f.Name)+": "+yamlQuote(v)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Setenv("CAIRN_CONFIG", cfg)
			fs = fresh()
			s, _, done = parseFlags(e, fs, nil)
			if done || s.from(f.Name) != fromConfig {
				t.Errorf("cairn %s: config key %s: %s did not set --%s", name, configKey(f.Name), v, f.Name)
			}
			os.Unsetenv("CAIRN_CONFIG")
		})
	}
}

// sampleValue is a value flag f accepts: its default, else one of its
// type's.
func sampleValue(f *flag.Flag) string {
	if f.DefValue != "" {
		return f.DefValue
	}
	if err := f.Value.Set("x"); err == nil {
		f.Value.Set(f.DefValue)
		return "x"
	}
	return "1"
}

func yamlQuote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

// TestSettingsPrecedence: the command line wins over the environment,
// which wins over the config file, which wins over the default; a config
// key that is no command's flag is refused, and so is a bad value.
func TestSettingsPrecedence(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "cairn.yaml")
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	parse := func(args ...string) (*flag.FlagSet, *settings, int, string) {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.Int("cache-mib", 512, "")
		fs.String("agent", "default", "")
		var stderr bytes.Buffer
		s, code, _ := parseFlags(&env{stdout: io.Discard, stderr: &stderr}, fs, args)
		return fs, s, code, stderr.String()
	}
	t.Setenv("CAIRN_CONFIG", cfg)
	write("cache_mib: 64\nagent: from-file\n")
	fs, s, _, _ := parse()
	if got := fs.Lookup("cache-mib").Value.String(); got != "64" || s.from("cache-mib") != fromConfig {
		t.Errorf("config only: cache-mib %s", got)
	}
	t.Setenv("CAIRN_CACHE_MIB", "128")
	fs, _, _, _ = parse()
	if got := fs.Lookup("cache-mib").Value.String(); got != "128" {
		t.Errorf("env over config: cache-mib %s", got)
	}
	if got := fs.Lookup("agent").Value.String(); got != "from-file" {
		t.Errorf("config beside env: agent %s", got)
	}
	fs, _, _, _ = parse("--cache-mib", "256")
	if got := fs.Lookup("cache-mib").Value.String(); got != "256" {
		t.Errorf("flag over env: cache-mib %s", got)
	}
	t.Setenv("CAIRN_CACHE_MIB", "lots")
	if _, _, code, msg := parse(); code != exitUsage || !strings.Contains(msg, "CAIRN_CACHE_MIB") {
		t.Errorf("bad variable: exit %d, %q", code, msg)
	}
	os.Unsetenv("CAIRN_CACHE_MIB")
	write("cache_mb: 64\n")
	if _, _, code, msg := parse(); code != exitUsage || !strings.Contains(msg, `unknown key "cache_mb"`) {
		t.Errorf("misspelt key: exit %d, %q", code, msg)
	}
	write("cache_mib: [1]\n")
	if _, _, code, _ := parse(); code != exitUsage {
		t.Errorf("a list for a number: exit %d", code)
	}
}

// TestEnvOnlyBinary runs a static build (CGO_ENABLED=0), as a container
// image holds it, from an empty directory with nothing in its environment
// but CAIRN_* and PORT: every command acts on the bucket CAIRN_BUCKET
// names, not on ./cairn-data, and serve listens on $PORT.
func TestEnvOnlyBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: builds a static cairn binary")
	}
	bin := filepath.Join(t.TempDir(), "cairn")
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	// As docs/deploy/Dockerfile builds it, but for -trimpath, which would
	// compile every package again instead of reusing the test build's.
	dockerfile, err := os.ReadFile("../../docs/deploy/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(dockerfile), `CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}"`) {
		t.Fatal("docs/deploy/Dockerfile no longer builds as this test does")
	}
	build := exec.Command(gobin, "build", "-ldflags", "-s -w -X main.version=v0.0.0-envtest", "-o", bin, "github.com/cairnstore/cairn/cmd/cairn")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("static build: %v\n%s", err, out)
	}
	store, work := t.TempDir(), t.TempDir()
	cairn := func(stdin string, env []string, args ...string) (int, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = work
		cmd.Env = append([]string{"CAIRN_BUCKET=file://" + store, "CAIRN_AGENT=env-agent"}, env...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, string(out)
	}
	if code, out := cairn(`{"id":"w"}`, nil, "workbench", "workbench_create"); code != 0 {
		t.Fatalf("workbench_create: exit %d\n%s", code, out)
	}
	if code, out := cairn("", nil, "pin", "create", "--name", "p1"); code != 0 {
		t.Fatalf("pin create: exit %d\n%s", code, out)
	}
	if code, out := cairn("", nil, "pin", "list"); code != 0 || !strings.Contains(out, "p1") {
		t.Fatalf("pin list: exit %d\n%s", code, out)
	}
	if code, out := cairn("", nil, "gc", "--all-agents", "--dry-run"); code != 0 || !strings.Contains(out, "shard") {
		t.Fatalf("gc --all-agents --dry-run: exit %d\n%s", code, out)
	}
	if entries, _ := os.ReadDir(work); len(entries) != 0 {
		t.Fatalf("the working directory holds %d entries: a command used ./%s", len(entries), defaultDataDir)
	}
	if code, out := cairn("", nil, "--version"); code != 0 || !strings.HasPrefix(out, "cairn v0.0.0-envtest ") {
		t.Fatalf("--version: exit %d\n%s", code, out)
	}
	servePort(t, bin, store, work)
}

// servePort runs `cairn serve` with only CAIRN_* and PORT in its
// environment: it listens on :$PORT (all interfaces, so it needs tokens)
// and serves the bucket CAIRN_BUCKET names.
func servePort(t *testing.T, bin, store, work string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	token := "0123456789abcdef0123456789abcdef"
	cmd := exec.Command(bin, "serve")
	cmd.Dir = work
	cmd.Env = []string{"CAIRN_BUCKET=file://" + store, "CAIRN_TOKENS=env-agent=" + token, "PORT=" + port}
	p := startServeCmd(t, cmd)
	if !strings.HasSuffix(p.base, ":"+port) {
		t.Fatalf("serving on %s, want port %s", p.base, port)
	}
	r, err := post(http.DefaultClient, "http://127.0.0.1:"+port+"/v1/agents/env-agent/tools/workbench_list",
		`{"id":"w","section":"input"}`, "Authorization", "Bearer "+token)
	if err != nil || r.status != http.StatusOK {
		t.Fatalf("list on $PORT: %v %+v", err, r)
	}
	p.stop(t)
}
