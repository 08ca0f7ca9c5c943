package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/workbench"
)

// Scenario names, in the order a run prints them.
const (
	PutNewWarm     = "put-new-warm"
	PutReplaceWarm = "put-replace-warm"
	PutCommitWarm  = "put-commit-warm"
	ColdStat       = "cold-stat"
	ColdRead       = "cold-read"
	ListCold       = "list-cold"
	ListWarm       = "list-warm"
	Grep           = "grep-1000"
	SearchAll      = "search-all"
	ReplicaMemory  = "replica-memory"
	Restore        = "restore"
	Throughput1    = "throughput-1"
	Throughput8    = "throughput-8"
)

// Scenarios returns every scenario's name in run order.
func Scenarios() []string {
	return []string{PutCommitWarm, PutNewWarm, PutReplaceWarm, ColdStat, ColdRead, ListCold, ListWarm,
		Grep, SearchAll, ReplicaMemory, Restore, Throughput1, Throughput8}
}

// Config is one run of the bench. The zero value of a field means its
// default (see Defaults); RTT and WriteRate are taken as given, so zero
// turns them off.
type Config struct {
	// Files are the workbench sizes to run every scenario at.
	Files []int
	// Scenarios to run; empty means all.
	Scenarios []string
	// RTT is the delay before every request.
	RTT time.Duration
	// WriteRate is the writes per second allowed to one object; 0 is no
	// limit.
	WriteRate float64
	// DirEntries is the size of the directory that list and grep read
	// (capped at the size of the workbench). Default 1,000.
	DirEntries int
	// Rate is the put_file rate offered by the throughput scenarios, in
	// total over their replicas. Default 100/s.
	Rate float64
	// Duration is how long the throughput scenarios offer puts. Default
	// 10 s.
	Duration time.Duration
	// Drain bounds the wait for calls still running after Duration;
	// calls still running then are cancelled and counted unfinished.
	// Default 30 s.
	Drain time.Duration
	// Replicas is the number of Services of throughput-8. Default 8.
	Replicas int
	// SeedConcurrency is the number of concurrent put_file calls the
	// default seeder makes. Default 512.
	SeedConcurrency int
	// SeedBatch is head.Options.MaxBatch of the Service that seeds the
	// workbench and then serves the warm scenarios (their calls are
	// single commands, which the bound does not touch). Default 1,024:
	// in the current format a commit rewrites every shard it touches, so
	// fewer commits write less, but a batch's cost grows faster than its
	// size; at 10,000 files 1,024 seeded faster than 256 or 4,096.
	SeedBatch int
	// PutSamples is the number of puts of new files that put-new-warm
	// makes, one at a time, each in a directory of its own, and of puts
	// replacing files that put-replace-warm makes: each row is their
	// mean, folds included, which one put alone would miss or carry
	// whole. Default 20.
	PutSamples int
	// CacheBytes is head.Options.CacheBytes of every replica; 0 is the
	// engine's default.
	CacheBytes int64
	// ValueFormat is workbench.Options.ValueFormat of every replica: the
	// format the bench's store is created in (2: commit members in rows).
	ValueFormat int
	// RandomBodies makes every body the bench writes random text (base64
	// of random bytes, about 1.33 times the entropy's size), which
	// compresses little: the objects that carry bodies inline (manifest
	// rows, delta segments) then weigh what incompressible files would.
	// By default bodies are lines of repeated English, which compress
	// well, as much source and prose does.
	RandomBodies bool
	// CommitSamples is the number of put+commit pairs put-commit-warm
	// makes. Default 10.
	CommitSamples int
	// Dir, when set, puts each size's store in a local-file bucket in a
	// fresh directory under Dir (removed after the size), as an embedded
	// deployment keeps it, and the rows count its fsyncs; otherwise the
	// store is in memory. A served run's emulator keeps its objects in a
	// fresh directory under Dir (default: the system's temporary one).
	Dir string
	// Served runs the scenarios through `cairn serve` processes, as a
	// deployment meets them: each size's store is in a GCS emulator
	// (`cairn fake-gcs`) in a process of its own, behind a proxy in the
	// bench's process that adds RTT before every request and answers 429
	// to writes of one object faster than WriteRate, and the servers
	// reach it through the proxy (with --commit-interval set to the write
	// limit's window). Seeding goes to the emulator directly. Only
	// ServedScenarios run this way; a row's counts are the proxy's and
	// its CPU is the servers'.
	Served bool
	// Binary is the cairn executable a served run starts.
	Binary string
	// ServeArgs are more flags for every `cairn serve` of a served run,
	// and EmulatorArgs for its `cairn fake-gcs`.
	ServeArgs, EmulatorArgs []string
	// StorageHold is how long the storage scenario's server runs on,
	// idle, after its workload, before the store is measured again
	// (0: not at all; at most MaxStorageHold): what a deployment's store
	// holds once its background sweeps have had their time.
	StorageHold time.Duration
	// Trace, if not nil, receives a line for every request the measured
	// scenarios make (not the seeding's): when it began, how long it
	// took, its size and its key.
	Trace io.Writer
	// Seeder fills a workbench; nil is PutFileSeeder.
	Seeder Seeder
	// Progress, if not nil, receives a line per phase (seeding, each
	// scenario) as the run goes.
	Progress io.Writer
}

// Defaults of a Config.
const (
	DefaultDirEntries      = 1000
	DefaultRate            = 100
	DefaultDuration        = 10 * time.Second
	DefaultDrain           = 30 * time.Second
	DefaultReplicas        = 8
	DefaultSeedConcurrency = 1024
	DefaultSeedBatch       = 1024
	DefaultPutSamples      = 20
	DefaultCommitSamples   = 10
)

func (c *Config) fill() {
	if len(c.Files) == 0 {
		c.Files = []int{1000, 10000}
	}
	if len(c.Scenarios) == 0 {
		c.Scenarios = Scenarios()
		if c.Served {
			c.Scenarios = ServedScenarios()
		}
	}
	if c.CommitSamples <= 0 {
		c.CommitSamples = DefaultCommitSamples
	}
	if c.DirEntries <= 0 {
		c.DirEntries = DefaultDirEntries
	}
	if c.Rate <= 0 {
		c.Rate = DefaultRate
	}
	if c.Duration <= 0 {
		c.Duration = DefaultDuration
	}
	if c.Drain <= 0 {
		c.Drain = DefaultDrain
	}
	if c.Replicas <= 0 {
		c.Replicas = DefaultReplicas
	}
	if c.SeedConcurrency <= 0 {
		c.SeedConcurrency = DefaultSeedConcurrency
	}
	if c.SeedBatch <= 0 {
		c.SeedBatch = DefaultSeedBatch
	}
	if c.PutSamples <= 0 {
		c.PutSamples = DefaultPutSamples
	}
	if c.Seeder == nil {
		c.Seeder = PutFileSeeder{Concurrency: c.SeedConcurrency, Progress: c.Progress}
	}
}

func (c *Config) wants(name string) bool { return slices.Contains(c.Scenarios, name) }

// Validate reports a Config that cannot run.
func (c Config) Validate() error {
	for _, n := range c.Files {
		if n < 1 {
			return fmt.Errorf("bench: files %d: must be at least 1", n)
		}
	}
	known := append(Scenarios(), Storage)
	for _, s := range c.Scenarios {
		if !slices.Contains(known, s) {
			return fmt.Errorf("bench: unknown scenario %q (known: %s)", s, strings.Join(known, ", "))
		}
	}
	switch {
	case c.StorageHold < 0 || c.StorageHold > MaxStorageHold:
		return fmt.Errorf("bench: storage hold %v: from 0 (none) to %v", c.StorageHold, MaxStorageHold)
	case c.StorageHold > 0 && !c.wants(Storage):
		return fmt.Errorf("bench: a storage hold needs the %s scenario", Storage)
	}
	if c.wants(Storage) {
		switch {
		case c.Served:
			return fmt.Errorf("bench: %s runs its own cairn serve on a local-file bucket: run it without --served", Storage)
		case c.Binary == "":
			return fmt.Errorf("bench: %s needs the cairn binary", Storage)
		}
	}
	if c.Served {
		switch {
		case c.Binary == "":
			return fmt.Errorf("bench: a served run needs the cairn binary")
		case c.Seeder != nil:
			return fmt.Errorf("bench: a served run seeds with put_file")
		}
		for _, s := range c.Scenarios {
			if !slices.Contains(ServedScenarios(), s) {
				return fmt.Errorf("bench: scenario %q does not run served (served: %s)", s, strings.Join(ServedScenarios(), ", "))
			}
		}
	}
	if c.PutSamples < 0 || c.CommitSamples < 0 {
		return fmt.Errorf("bench: put samples %d, commit samples %d: must not be negative", c.PutSamples, c.CommitSamples)
	}
	if v := c.ValueFormat; v != 0 && (v > workbench.ValueFormat || v < workbench.OldestValueFormat) {
		return fmt.Errorf("bench: value format %d: from %d to %d", v, workbench.OldestValueFormat, workbench.ValueFormat)
	}
	if c.RTT < 0 || c.WriteRate < 0 {
		return fmt.Errorf("bench: rtt and write rate must not be negative")
	}
	for _, n := range []struct {
		name string
		v    int64
	}{{"dir entries", int64(c.DirEntries)}, {"replicas", int64(c.Replicas)}, {"seed concurrency", int64(c.SeedConcurrency)},
		{"seed batch", int64(c.SeedBatch)}, {"cache bytes", c.CacheBytes}, {"duration", int64(c.Duration)}, {"drain", int64(c.Drain)}} {
		if n.v < 0 {
			return fmt.Errorf("bench: %s %d: must not be negative (0 is the default)", n.name, n.v)
		}
	}
	switch {
	case math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) || c.Rate < 0 || c.Rate > MaxRate:
		return fmt.Errorf("bench: rate %v: from 0 (the default) to %d calls a second", c.Rate, MaxRate)
	case math.IsNaN(c.WriteRate) || math.IsInf(c.WriteRate, 0) || (c.WriteRate != 0 && c.WriteRate < MinWriteRate) || c.WriteRate > MaxRate:
		return fmt.Errorf("bench: write rate %v: 0 (no limit) or from %v to %d writes a second", c.WriteRate, MinWriteRate, MaxRate)
	case c.Replicas > MaxReplicas:
		return fmt.Errorf("bench: replicas %d: at most %d", c.Replicas, MaxReplicas)
	case c.Served && c.Replicas > MaxServedReplicas:
		return fmt.Errorf("bench: replicas %d: at most %d in a served run, each a cairn serve process", c.Replicas, MaxServedReplicas)
	case c.RTT > time.Minute:
		return fmt.Errorf("bench: rtt %v: at most a minute", c.RTT)
	}
	if c.Rate > 0 {
		d := cmp.Or(c.Duration, DefaultDuration)
		if c.Rate*d.Seconds() < 1 {
			return fmt.Errorf("bench: rate %v for %v offers no call", c.Rate, d)
		}
	}
	return nil
}

// Bounds of the rates and replicas a Config may ask for: past them a run
// would measure the machine's limits, not cairn's, or never end.
const (
	MaxRate      = 1_000_000
	MinWriteRate = 0.01
	MaxReplicas  = 256
	// MaxServedReplicas bounds the serve processes of a served run: each
	// holds 150–400 MB resident under load.
	MaxServedReplicas = 32
)

// Row is one scenario at one size.
type Row struct {
	Scenario string `json:"scenario"`
	Files    int    `json:"files"`
	// Requests, Rounds and the bytes are the bucket/counting figures of
	// the measured replica (of all replicas, for throughput-8).
	Requests     int64 `json:"requests"`
	Rounds       int64 `json:"rounds"`
	BytesRead    int64 `json:"bytes_read"`
	BytesWritten int64 `json:"bytes_written"`
	// HeadBytes is the head's size after the scenario.
	HeadBytes int64 `json:"head_bytes"`
	// Wall is the scenario's elapsed time with latency emulated.
	Wall time.Duration `json:"wall_ns"`
	// CPU is the process's CPU time during the scenario, where measured.
	CPU time.Duration `json:"cpu_ns,omitempty"`
	// Fsyncs are the local-file bucket's fsyncs during the scenario
	// (files, directories and whole file systems), with Config.Dir.
	Fsyncs int64 `json:"fsyncs,omitempty"`
	// Metrics are the scenario's own figures (latency percentiles,
	// acknowledged rate, heap, ...), also summarised in Notes.
	Metrics map[string]float64 `json:"metrics,omitempty"`
	Notes   string             `json:"notes"`
	// Extrapolated rows are fitted, not measured.
	Extrapolated bool `json:"extrapolated,omitempty"`
}

// Table is what a run prints.
type Table struct {
	Config struct {
		RTT       time.Duration `json:"rtt_ns"`
		WriteRate float64       `json:"write_rate"`
		Rate      float64       `json:"rate"`
		Duration  time.Duration `json:"duration_ns"`
		Files     bool          `json:"local_file_bucket,omitempty"`
		Served    bool          `json:"served,omitempty"`
		Random    bool          `json:"random_bodies,omitempty"`
	} `json:"config"`
	// Seeding is how long each size took to seed, without latency.
	Seeding []Seeding `json:"seeding"`
	Rows    []Row     `json:"rows"`
}

// Seeding is the cost of filling one size.
type Seeding struct {
	Files        int           `json:"files"`
	Wall         time.Duration `json:"wall_ns"`
	BytesWritten int64         `json:"bytes_written"`
	StoreBytes   int64         `json:"store_bytes"`
	Objects      int           `json:"objects"`
}

// Row returns the row of scenario at files, if any.
func (t *Table) Row(scenario string, files int) (Row, bool) {
	for _, r := range t.Rows {
		if r.Scenario == scenario && r.Files == files {
			return r, true
		}
	}
	return Row{}, false
}

func fromStats(s counting.Stats) Row {
	t := s.Total()
	return Row{Requests: t.Requests, Rounds: s.Rounds, BytesRead: t.BytesRead, BytesWritten: t.BytesWritten}
}

// add adds the counts of s to r.
func (r *Row) add(s counting.Stats) {
	o := fromStats(s)
	r.Requests += o.Requests
	r.Rounds += o.Rounds
	r.BytesRead += o.BytesRead
	r.BytesWritten += o.BytesWritten
}

// addSince adds the counts of now less those of before.
func (r *Row) addSince(now, before counting.Stats) {
	a, b := fromStats(now), fromStats(before)
	r.Requests += a.Requests - b.Requests
	r.Rounds += a.Rounds - b.Rounds
	r.BytesRead += a.BytesRead - b.BytesRead
	r.BytesWritten += a.BytesWritten - b.BytesWritten
}

func (r *Row) metric(name string, v float64) {
	if r.Metrics == nil {
		r.Metrics = map[string]float64{}
	}
	r.Metrics[name] = v
}

func (r *Row) note(format string, args ...any) {
	if r.Notes != "" {
		r.Notes += "; "
	}
	r.Notes += fmt.Sprintf(format, args...)
}

// Run seeds each size and runs the scenarios, in order.
func Run(ctx context.Context, cfg Config) (*Table, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.fill()
	t := &Table{}
	t.Config.RTT, t.Config.WriteRate, t.Config.Rate, t.Config.Duration = cfg.RTT, cfg.WriteRate, cfg.Rate, cfg.Duration
	t.Config.Files, t.Config.Served, t.Config.Random = cfg.Dir != "", cfg.Served, cfg.RandomBodies
	var stores []string
	defer func() {
		for _, dir := range stores {
			os.RemoveAll(dir)
		}
	}()
	for _, n := range cfg.Files {
		if cfg.wants(Storage) {
			row, err := runStorage(ctx, cfg, n)
			if err != nil {
				return t, err
			}
			t.Rows = append(t.Rows, row)
			if len(cfg.Scenarios) == 1 {
				continue // nothing to seed for
			}
		}
		rows, seed, err := runSize(ctx, cfg, n, &stores)
		t.Rows = append(t.Rows, rows...)
		if seed != nil {
			t.Seeding = append(t.Seeding, *seed)
		}
		if err != nil {
			return t, err
		}
	}
	return t, nil
}

func (c Config) progress(format string, args ...any) {
	if c.Progress != nil {
		fmt.Fprintf(c.Progress, "bench: "+format+"\n", args...)
	}
}

// WriteText prints the table as aligned columns (scenario and notes
// left-aligned, figures right-aligned), then the seeding times.
func (t *Table) WriteText(w io.Writer) error {
	lines := [][]string{{"scenario", "files", "requests", "rounds", "read", "written", "head", "wall", "cpu", "notes"}}
	for _, r := range t.Rows {
		name := r.Scenario
		if r.Extrapolated {
			name += "*"
		}
		head, wall, cpu := "-", "-", "-"
		if r.HeadBytes > 0 {
			head = size(r.HeadBytes)
		}
		if r.Wall > 0 {
			wall = dur(r.Wall)
		}
		if r.CPU > 0 {
			cpu = dur(r.CPU)
		}
		lines = append(lines, []string{name, fmt.Sprint(r.Files), fmt.Sprint(r.Requests), fmt.Sprint(r.Rounds),
			size(r.BytesRead), size(r.BytesWritten), head, wall, cpu, r.Notes})
	}
	width := make([]int, len(lines[0]))
	for _, l := range lines {
		for i, c := range l {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for _, l := range lines {
		for i, c := range l {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			switch {
			case i == 0:
				b.WriteString(c + pad)
			case i == len(l)-1:
				b.WriteString("  " + c)
			default:
				b.WriteString("  " + pad + c)
			}
		}
		b.WriteString("\n")
	}
	store := "in memory"
	switch {
	case t.Config.Served:
		store = "in a GCS emulator process, reached by cairn serve processes through a proxy adding the rtt and write rate"
	case t.Config.Files:
		store = "in a local-file bucket"
	}
	onlyStorage := len(t.Rows) > 0 && !slices.ContainsFunc(t.Rows, func(r Row) bool { return r.Scenario != Storage })
	if onlyStorage {
		// The storage workload adds no latency: its server and its
		// bucket are on this machine.
		fmt.Fprintf(&b, "\nstore in a local-file bucket behind one cairn serve, no added latency; sizes in bytes, K = KiB, M = MiB")
	} else {
		fmt.Fprintf(&b, "\nstore %s, rtt %s, write rate %g/s per object; sizes in bytes, K = KiB, M = MiB; q/r = requests/rounds",
			store, t.Config.RTT, t.Config.WriteRate)
	}
	if t.Config.Random {
		b.WriteString("; bodies of random text")
	}
	if slices.ContainsFunc(t.Rows, func(r Row) bool { return r.Extrapolated }) {
		b.WriteString("; * extrapolated, not measured")
	}
	b.WriteString("\n")
	for _, s := range t.Seeding {
		fmt.Fprintf(&b, "seeded %d files in %s without latency: %s written, store %s in %d objects\n",
			s.Files, dur(s.Wall), size(s.BytesWritten), size(s.StoreBytes), s.Objects)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON prints the table as one JSON document.
func (t *Table) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(t)
}

func size(n int64) string {
	switch {
	case n < 10<<10:
		return fmt.Sprintf("%dB", n)
	case n < 10<<20:
		return fmt.Sprintf("%.1fK", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%.1fM", float64(n)/(1<<20))
	}
}

// msOf is d in milliseconds.
func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func dur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
}
