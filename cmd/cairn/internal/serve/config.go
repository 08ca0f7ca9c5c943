package serve

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Config is the file `cairn serve --config FILE` reads, YAML or JSON (a
// JSON document is YAML too):
//
//	bucket: gs://my-bucket/cairn
//	addr: 0.0.0.0:7070
//	request_timeout: 60s
//	idle_timeout: 5m
//	shutdown_timeout: 30s
//	agents:
//	  - id: agent1
//	    token: s3cret-1
//	  - id: agent2
//	    token: s3cret-2
//
// Every member is optional; an unknown member is an error. Flags and
// environment variables override the file.
type Config struct {
	Bucket          string        `yaml:"bucket"`
	Addr            string        `yaml:"addr"`
	RequestTimeout  Duration      `yaml:"request_timeout"`
	IdleTimeout     Duration      `yaml:"idle_timeout"`
	ShutdownTimeout Duration      `yaml:"shutdown_timeout"`
	Agents          []AgentConfig `yaml:"agents"`
	// Other holds the keys of other settings: the file is shared by every
	// command, and cairn's settings layer checks those keys.
	Other map[string]yaml.Node `yaml:",inline"`
}

// AgentConfig names one agent root served and its bearer token.
type AgentConfig struct {
	ID    string `yaml:"id"`
	Token string `yaml:"token"`
}

// Duration is a time.Duration written as Go writes one ("90s", "5m").
type Duration time.Duration

// UnmarshalYAML parses a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if v <= 0 {
		return fmt.Errorf("duration %q is not positive", s)
	}
	*d = Duration(v)
	return nil
}

// LoadConfig reads and checks a config file.
func LoadConfig(path string) (Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	// An empty file is an empty config.
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	if _, err := c.Tokens(); err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// Tokens returns the config's agents as a map of agent id to token. An
// agent without an id or a token, or named twice, is an error.
func (c Config) Tokens() (map[string]string, error) {
	out := map[string]string{}
	for i, a := range c.Agents {
		if a.ID == "" {
			return nil, fmt.Errorf("agents[%d] has no id", i)
		}
		if a.Token == "" {
			return nil, fmt.Errorf("agent %s has no token", a.ID)
		}
		if err := checkToken(a.ID, a.Token); err != nil {
			return nil, err
		}
		if _, dup := out[a.ID]; dup {
			return nil, fmt.Errorf("agent %s is named twice", a.ID)
		}
		out[a.ID] = a.Token
	}
	return out, nil
}

// ParseTokens parses CAIRN_TOKENS: "agent1=token1,agent2=token2". Spaces
// around an entry are ignored; an entry without "=", with an empty id or
// token, or naming an agent twice is an error. A token may hold "=" but
// not ",".
func ParseTokens(s string) (map[string]string, error) {
	out := map[string]string{}
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		id, tok, ok := strings.Cut(entry, "=")
		if !ok || id == "" || tok == "" {
			return nil, fmt.Errorf("token entry %q is not agent=token", redact(entry))
		}
		if err := checkToken(id, tok); err != nil {
			return nil, err
		}
		if _, dup := out[id]; dup {
			return nil, fmt.Errorf("agent %s is named twice", id)
		}
		out[id] = tok
	}
	return out, nil
}

// MinTokenBytes is the shortest bearer token a config file or
// CAIRN_TOKENS may give: 16 bytes, so that a token drawn at random (32
// hexadecimal digits from `openssl rand -hex 16` are 128 bits) cannot be
// guessed, and a short word is refused.
const MinTokenBytes = 16

// checkToken refuses a token shorter than MinTokenBytes. The error names
// the agent, never the token.
func checkToken(agent, token string) error {
	if len(token) < MinTokenBytes {
		return fmt.Errorf("the token of agent %s is %d bytes; a token must be at least %d bytes, drawn at random", agent, len(token), MinTokenBytes)
	}
	return nil
}

// redact keeps what precedes "=" of an entry, so that an error never
// prints a token.
func redact(entry string) string {
	if id, _, ok := strings.Cut(entry, "="); ok {
		return id + "=…"
	}
	if len(entry) > 4 {
		return entry[:2] + "…"
	}
	return "…"
}

// Loopback reports whether addr (host:port) names only a loopback
// interface: "localhost", or an IP in 127.0.0.0/8 or ::1. An empty host,
// 0.0.0.0 or :: (every interface) and any other name are not.
func Loopback(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, err
	}
	if strings.EqualFold(host, "localhost") {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}
