package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Settings. Every flag of every command can also be given by an
// environment variable and by a key of the config file, and the first of
// these that is set wins:
//
//	the command line   --cache-mib 256
//	the environment    CAIRN_CACHE_MIB=256
//	the config file    cache_mib: 256
//	the default
//
// The variable is CAIRN_ and the flag's name upper-cased with '-' as '_';
// the key is the flag's name with '-' as '_'. The config file is YAML (or
// JSON), named by the command's --config flag where it has one, else by
// CAIRN_CONFIG. One file serves every command: a command reads the keys
// of its own flags and leaves the others to theirs, but a key that is no
// command's flag (configKeys) is refused, so that a misspelt setting is
// not silently ignored.

// configKeys are the keys a config file may hold: every command's flags
// (TestEverySettingHasItsKey keeps the list true) and serve's agents.
var configKeys = []string{
	"addr", "after", "agent", "agents", "all", "all_agents", "answer_budget_mib", "auth_fail_burst", "bodies",
	"body_budget_mib", "body_rate_mib", "bucket", "cache_mib", "commit_interval", "commit_samples", "concurrency",
	"config", "conn_idle_timeout", "console", "console_writes", "cpuprofile", "cursor", "dir", "dir_entries",
	"dry_run", "duration", "emulator_flag", "extrapolate", "files", "follow", "from_json", "gc_interval", "gc_percent", "grace",
	"idempotency_key", "idempotency_retention", "idle_timeout", "input",
	"interval", "json", "keep_going", "limit", "log_format", "log_level",
	"max_conns", "max_findings", "member_trees", "memory_limit_mib", "memprofile", "name", "note", "parallel", "pin", "prefix", "put_samples",
	"quiet", "random_bodies", "rate", "read_budget_mib", "replace", "replicas", "request_timeout", "revisions",
	"root", "rtt", "scenarios", "section", "seed_batch", "seed_concurrency",
	"serve_flag", "served", "server", "shutdown_timeout", "storage_hold", "svg", "to", "token", "trace", "value_format", "workbench",
	"write_rate", "write_timeout",
}

// origin says where a flag's value came from.
type origin int

const (
	fromDefault origin = iota
	fromConfig
	fromEnv
	fromFlag
)

// settings are a parsed command line with the environment and the config
// file applied.
type settings struct {
	origins map[string]origin
}

// from reports where flag name's value came from.
func (s *settings) from(name string) origin { return s.origins[name] }

// envName is the environment variable of flag name.
func envName(name string) string {
	return "CAIRN_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// configKey is the config file's key of flag name.
func configKey(name string) string { return strings.ReplaceAll(name, "-", "_") }

// parseFlags parses a command's arguments into fs and applies the
// environment and the config file to the flags the command line left
// unset (applySettings). On --help it has printed fs's usage and returns
// done with exitOK; on a bad flag, variable or config, done with
// exitUsage.
func parseFlags(e *env, fs *flag.FlagSet, args []string) (s *settings, code int, done bool) {
	if code, done := parseArgs(fs, args); done {
		return nil, code, true
	}
	return applySettings(e, fs)
}

// parseArgs is fs.Parse for a command that parses in steps (flags before
// and after its positional arguments): --help is done with exitOK, a bad
// flag done with exitUsage. The command then calls applySettings.
func parseArgs(fs *flag.FlagSet, args []string) (code int, done bool) {
	if flagSetHook != nil {
		flagSetHook(fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, true
		}
		return exitUsage, true
	}
	return exitOK, false
}

// applySettings fills each flag the command line left unset from its
// environment variable, else from the config file's key. An empty
// variable counts as unset.
func applySettings(e *env, fs *flag.FlagSet) (s *settings, code int, done bool) {
	s = &settings{origins: map[string]origin{}}
	fs.Visit(func(f *flag.Flag) { s.origins[f.Name] = fromFlag })
	fail := func(format string, a ...any) (*settings, int, bool) {
		fmt.Fprintf(e.stderr, "cairn %s: "+format+"\n", append([]any{fs.Name()}, a...)...)
		return nil, exitUsage, true
	}
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || s.origins[f.Name] != fromDefault {
			return
		}
		if v := os.Getenv(envName(f.Name)); v != "" {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("%s=%q: %v", envName(f.Name), v, serr)
				return
			}
			s.origins[f.Name] = fromEnv
		}
	})
	if err != nil {
		return fail("%v", err)
	}
	path := os.Getenv("CAIRN_CONFIG")
	if f := fs.Lookup("config"); f != nil && f.Value.String() != "" {
		path = f.Value.String()
	}
	if path == "" {
		return s, exitOK, false
	}
	values, err := readConfig(path)
	if err != nil {
		return fail("%v", err)
	}
	fs.VisitAll(func(f *flag.Flag) {
		v, ok := values[configKey(f.Name)]
		if err != nil || !ok || s.origins[f.Name] != fromDefault {
			return
		}
		if serr := fs.Set(f.Name, v); serr != nil {
			err = fmt.Errorf("config %s: %s: %q: %v", path, configKey(f.Name), v, serr)
			return
		}
		s.origins[f.Name] = fromConfig
	})
	if err != nil {
		return fail("%v", err)
	}
	return s, exitOK, false
}

// flagSetHook, when set (tests only), sees every FlagSet parseFlags is
// given, so that a test can walk every command's flags.
var flagSetHook func(*flag.FlagSet)

// readConfig reads a config file's settings: its scalar values as the
// text a flag would take. A key that is no command's flag is an error;
// serve's agents (a list) are read by serve itself.
func readConfig(path string) (map[string]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc map[string]yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(raw)).Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	out := map[string]string{}
	keys := make([]string, 0, len(doc))
	for k := range doc {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(configKeys, k) {
			return nil, fmt.Errorf("config %s: unknown key %q (keys are flag names with '_' for '-')", path, k)
		}
		n := doc[k]
		if k == "agents" {
			continue // serve reads them
		}
		if n.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("config %s: %s: want a single value", path, k)
		}
		out[k] = n.Value
	}
	return out, nil
}
