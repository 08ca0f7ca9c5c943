package serve

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cairnstore/cairn/workbench"
	"github.com/yuin/goldmark"
)

// How a file page shows a body (renderBody), chosen by content type,
// then by the name's extension:
const (
	viewText     = "text"     // lines, numbered
	viewMarkdown = "markdown" // rendered; raw HTML in it is left out
	viewJSON     = "json"     // pretty-printed, numbered
	viewCSV      = "csv"      // a table
	viewImage    = "image"    // inline, from the raw route
	viewBinary   = "binary"   // its size and a download link
)

// consoleCSVRows is the most rows of a CSV table shown, consoleLines the
// most lines of a text (a page of 256 KiB of short lines would otherwise
// be megabytes of HTML).
const (
	consoleCSVRows = 500
	consoleLines   = 5000
)

// renderedBody is a body as a page shows it.
type renderedBody struct {
	Card      workbench.StatCard
	View      string
	Lines     []string      // text and json
	MoreLines bool          // lines past consoleLines
	HTML      template.HTML // markdown
	Table     [][]string    // csv: the header row first
	MoreRows  bool          // csv rows past consoleCSVRows
	Truncated bool          // only the first consoleBodyShown bytes were read
	Raw       string        // the download's address
	Inline    string        // an image's address
	Note      string        // why a body is not shown as its type says
}

func renderBody(agent, wb, p string, b *workbench.Body) *renderedBody {
	out := &renderedBody{Card: b.Card, Truncated: b.Truncated, Raw: rawHref(agent, wb, p)}
	ct := strings.ToLower(deref(b.Card.ContentType))
	ext := strings.ToLower(path.Ext(p))
	switch {
	case inlineImage(ct):
		out.View, out.Inline = viewImage, out.Raw+"?inline=1"
		return out
	case !utf8.Valid(trimPartialRune(b.Bytes, b.Truncated)):
		out.View = viewBinary
		return out
	case strings.Contains(ct, "markdown") || ext == ".md" || ext == ".markdown":
		var buf bytes.Buffer
		if err := goldmark.Convert(b.Bytes, &buf); err == nil {
			out.View, out.HTML = viewMarkdown, template.HTML(buf.String())
			return out
		}
	case strings.Contains(ct, "json") || ext == ".json":
		var buf bytes.Buffer
		if !b.Truncated && json.Indent(&buf, b.Bytes, "", "  ") == nil {
			out.View, out.Lines = viewJSON, splitLines(buf.String())
			return out.capLines()
		}
		out.Note = "not shown pretty-printed: it is not whole JSON"
	case strings.Contains(ct, "csv") || ext == ".csv":
		r := csv.NewReader(bytes.NewReader(b.Bytes))
		r.FieldsPerRecord = -1
		r.LazyQuotes = true
		for len(out.Table) <= consoleCSVRows {
			rec, err := r.Read()
			if err != nil {
				break
			}
			out.Table = append(out.Table, rec)
		}
		if len(out.Table) > consoleCSVRows {
			out.Table, out.MoreRows = out.Table[:consoleCSVRows], true
		}
		if len(out.Table) > 0 {
			out.View = viewCSV
			return out
		}
	}
	out.View, out.Lines = viewText, splitLines(string(trimPartialRune(b.Bytes, b.Truncated)))
	return out.capLines()
}

// capLines keeps the first consoleLines lines.
func (r *renderedBody) capLines() *renderedBody {
	if len(r.Lines) > consoleLines {
		r.Lines, r.MoreLines = r.Lines[:consoleLines], true
	}
	return r
}

// trimPartialRune drops a rune cut at the end of a truncated read.
func trimPartialRune(b []byte, truncated bool) []byte {
	if !truncated {
		return b
	}
	for i := 0; i < utf8.UTFMax && len(b) > 0; i++ {
		if r, _ := utf8.DecodeLastRune(b); r != utf8.RuneError {
			break
		}
		b = b[:len(b)-1]
	}
	return b
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return []string{""}
	}
	return strings.Split(s, "\n")
}

// inlineImage reports whether a page shows a body of content type ct as
// an image: raster types only (an SVG may carry script).
func inlineImage(ct string) bool {
	switch strings.ToLower(strings.TrimSpace(strings.Split(ct, ";")[0])) {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

// fileHistory is what a file page tells of the file's generations: the
// file in each snapshot of its workbench (the newest snapshotsShown), and
// its events in the newest part of the change feed. The feed is read in
// windows of versions stepping back from the newest, each twice the one
// before, until historyEvents events were read or the workbench's first
// version: a file's recent changes are found first, at a bounded cost,
// however large the workbench.
type fileHistory struct {
	Snapshots []snapshotState
	Events    []workbench.Change // the newest first
	// From and To bound the commit versions whose events were read.
	From, To uint64
	// Partial: versions before From were not read.
	Partial bool
}

type snapshotState struct {
	Snapshot workbench.SnapshotInfo
	Present  bool
	Card     *workbench.StatCard
	Error    string
}

const (
	snapshotsShown = 10
	historyEvents  = 5000
	historyWindow  = 16 // versions of the first window
)

func historyOf(ctx context.Context, svc *workbench.Service, wb, section, rel string) (*fileHistory, error) {
	h := &fileHistory{}
	snaps, err := svc.SnapshotList(ctx, workbench.SnapshotListInput{ID: wb})
	if err != nil {
		return nil, err
	}
	list := snaps.Snapshots
	if len(list) > snapshotsShown {
		list = list[len(list)-snapshotsShown:]
	}
	for i := len(list) - 1; i >= 0; i-- {
		sn := list[i]
		st := snapshotState{Snapshot: sn}
		if sn.State == "alive" {
			res, err := svc.Stat(ctx, workbench.StatInput{ID: wb, Section: &section, Path: rel, AtSnapshot: sn.SnapshotID})
			switch {
			case err == nil:
				st.Present, st.Card = true, &res.Card
			case workbench.FromError(err).Code == workbench.CodeNotFound:
			default:
				st.Error = workbench.FromError(err).Message
			}
		}
		h.Snapshots = append(h.Snapshots, st)
	}
	v, err := svc.Inspect(ctx, wb)
	if err != nil {
		return nil, err
	}
	first := v.CreatedVersion - min(v.CreatedVersion, 1) // the feed after it holds the workbench's events
	want := section + "/" + rel
	h.From, h.To = v.ReadVersion, v.ReadVersion
	read := 0
	for window := uint64(historyWindow); h.From > first && read < historyEvents; window *= 2 {
		lo := h.From - min(h.From-first, window)
		var found []workbench.Change
		req := workbench.ChangesRequest{WorkbenchID: wb, AfterCommitVersion: &lo, Limit: 1000}
		complete := false
	window:
		for read < historyEvents {
			pg, err := svc.ReadChanges(ctx, req)
			if err != nil {
				return nil, err
			}
			for _, ev := range pg.Events {
				if ev.CommitVersion > h.From {
					complete = true
					break window
				}
				read++
				if ev.Path != nil && *ev.Path == want {
					found = append(found, ev)
				}
			}
			if pg.CaughtUp || len(pg.Events) == 0 {
				complete = true
				break
			}
			req = workbench.ChangesRequest{WorkbenchID: wb, Cursor: pg.NextCursor, Limit: 1000}
		}
		if !complete {
			// The budget ran out inside the window, before its newest
			// versions: what it found would leave a gap.
			break
		}
		slices.Reverse(found)
		h.Events = append(h.Events, found...)
		h.From = lo
	}
	h.Partial = h.From > first
	return h, nil
}

// The console's addresses. Every component is escaped on its own.

func agentHref(agent string) string { return "/ui/a/" + url.PathEscape(agent) + "/" }

func wbHref(agent, wb string) string { return agentHref(agent) + "w/" + url.PathEscape(wb) + "/" }

func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

func lsHref(agent, wb, p string) string {
	if p == "" {
		return wbHref(agent, wb) + "ls/"
	}
	return wbHref(agent, wb) + "ls/" + escapePath(p) + "/"
}

// commitHref is the page of one of a workbench's commits (its last for
// an empty id), from cursor.
func commitHref(agent, wb, commit, cursor string) string {
	v := url.Values{}
	if commit != "" {
		v.Set("c", commit)
	}
	if cursor != "" {
		v.Set("cursor", cursor)
	}
	if len(v) == 0 {
		return wbHref(agent, wb) + "commit"
	}
	return wbHref(agent, wb) + "commit?" + v.Encode()
}

func fileHref(agent, wb, p string) string { return wbHref(agent, wb) + "f/" + escapePath(p) }

func rawHref(agent, wb, p string) string { return wbHref(agent, wb) + "raw/" + escapePath(p) }

// entryPath is a listed entry's section-joined path.
func entryPath(e workbench.ListEntry) string {
	if e.Section == nil {
		return ""
	}
	if e.RelativePath == nil || *e.RelativePath == "" {
		return *e.Section
	}
	return *e.Section + "/" + *e.RelativePath
}

var consoleFuncs = template.FuncMap{
	"agentHref":  agentHref,
	"wbHref":     wbHref,
	"lsHref":     lsHref,
	"fileHref":   fileHref,
	"commitHref": commitHref,
	"entryHref": func(agent, wb string, e workbench.ListEntry) string {
		if e.Kind == "file" {
			return fileHref(agent, wb, entryPath(e))
		}
		return lsHref(agent, wb, entryPath(e))
	},
	"query": func(base, key, value string) string {
		return base + "?" + url.Values{key: {value}}.Encode()
	},
	"size": func(n any) string {
		switch v := n.(type) {
		case *uint64:
			if v == nil {
				return "—"
			}
			return humanSize(*v)
		case uint64:
			return humanSize(v)
		case int64:
			return humanSize(uint64(max(v, 0)))
		}
		return fmt.Sprint(n)
	},
	"deref": deref,
	"num": func(v *uint64) string {
		if v == nil {
			return "—"
		}
		return strconv.FormatUint(*v, 10)
	},
	"unixms": func(ms uint64) string {
		return time.UnixMilli(int64(ms)).UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"until": func(ms uint64, now int64) string {
		d := time.Duration(int64(ms)-now) * time.Millisecond
		if d < 0 {
			return "ended " + (-d).Round(time.Second).String() + " ago"
		}
		return "in " + d.Round(time.Second).String()
	},
	"add": func(a, b int) int { return a + b },
	"short": func(s string) string {
		if len(s) > 19 {
			return s[:19] + "…"
		}
		return s
	},
	"sample": func(s Sample) string {
		if strings.HasSuffix(s.Name, "_timestamp_seconds") {
			if s.Value == 0 {
				return "never"
			}
			return time.Unix(int64(s.Value), 0).UTC().Format("2006-01-02 15:04:05 UTC")
		}
		if strings.HasSuffix(s.Name, "_bytes_total") {
			return humanSize(uint64(s.Value))
		}
		return strconv.FormatFloat(s.Value, 'f', -1, 64)
	},
}

func humanSize(n uint64) string {
	switch {
	case n < 1<<10:
		return strconv.FormatUint(n, 10) + " B"
	case n < 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KiB"
	case n < 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	}
	return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + " GiB"
}

// The live tail: GET …/events[?wb=ID] is a stream of server-sent events,
// one "change" per event of the agent's change feed (of one workbench
// with wb), each with its feed cursor as id, so that a reconnecting
// EventSource resumes where it stopped (Last-Event-ID). A stream starts
// with the last few events as "backlog", polls the feed every
// tailPoll, and ends after tailLife (the browser reconnects), so that a
// page left open neither holds a request past a shutdown's grace nor an
// agent open while it is idle between polls.
const (
	tailPoll    = 300 * time.Millisecond
	tailLife    = 25 * time.Second
	tailBacklog = 50
	tailVersion = 20 // versions read back for the backlog
	tailPages   = 5  // pages of the feed read for the backlog, at most
	// maxStreams bounds the tails a server keeps open at once: each polls
	// its agent's head three times a second, a read the bucket bills.
	// Past it a new one is refused (503, retryable); the page still works.
	maxStreams = 64
)

func (c *console) serveEvents(w http.ResponseWriter, r *http.Request, se *session) {
	id, ok := c.agentOf(w, r, se)
	if !ok {
		return
	}
	select {
	case <-c.s.streamsDone:
		c.fail(w, r, se, http.StatusServiceUnavailable, "The server is shutting down.")
		return
	default:
	}
	if c.s.streams.Add(1) > maxStreams {
		c.s.streams.Add(-1)
		w.Header().Set("Retry-After", "5")
		c.fail(w, r, se, http.StatusServiceUnavailable, "Too many live tails are open on this server; try again later.")
		return
	}
	defer c.s.streams.Add(-1)
	wb := r.URL.Query().Get("wb")
	life := min(tailLife, c.s.opts.RequestTimeout)
	ctx, cancel := context.WithTimeout(r.Context(), life)
	defer cancel()
	rc := http.NewResponseController(w)
	rc.SetWriteDeadline(time.Now().Add(life + c.s.opts.WriteTimeout))

	// Each poll holds the agent only while it reads.
	poll := func(req workbench.ChangesRequest) (workbench.ChangesPage, error) {
		a, err := c.s.pool.acquire(ctx, id)
		if err != nil {
			return workbench.ChangesPage{}, err
		}
		defer c.s.pool.release(a)
		return a.svc.ReadChanges(ctx, req)
	}
	var backlog []workbench.Change
	cursor := r.Header.Get("Last-Event-ID")
	if cursor == "" {
		a, err := c.s.pool.acquire(ctx, id)
		if err != nil {
			c.failErr(w, r, se, err)
			return
		}
		sn, err := a.svc.Store().PinOrEmpty(ctx)
		c.s.pool.release(a)
		if err != nil {
			c.failErr(w, r, se, err)
			return
		}
		from := sn.Sequence() - min(sn.Sequence(), tailVersion)
		req := workbench.ChangesRequest{WorkbenchID: wb, AfterCommitVersion: &from, Limit: 1000}
		for range tailPages {
			pg, err := poll(req)
			if err != nil {
				c.failErr(w, r, se, err)
				return
			}
			backlog = append(backlog, pg.Events...)
			if len(backlog) > tailBacklog {
				backlog = backlog[len(backlog)-tailBacklog:]
			}
			cursor = pg.NextCursor
			if pg.CaughtUp || len(pg.Events) == 0 {
				break
			}
			req = workbench.ChangesRequest{WorkbenchID: wb, Cursor: cursor, Limit: 1000}
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	send := func(kind string, ev workbench.Change, id string) error {
		data, err := workbench.MarshalResult(ev)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "id: %s\nevent: %s\ndata: %s\n\n", id, kind, data); err != nil {
			return err
		}
		return nil
	}
	fmt.Fprintf(w, "retry: 1000\n\n")
	for _, ev := range backlog {
		if send("backlog", ev, cursor) != nil {
			return
		}
	}
	rc.Flush()
	tick := time.NewTicker(tailPoll)
	defer tick.Stop()
	lastBeat := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.s.streamsDone:
			return
		case <-tick.C:
		}
		pg, err := poll(workbench.ChangesRequest{WorkbenchID: wb, Cursor: cursor, Limit: 1000})
		if err != nil {
			if ctx.Err() == nil {
				fmt.Fprintf(w, "event: failure\ndata: %s\n\n", strings.ReplaceAll(workbench.FromError(err).Message, "\n", " "))
				rc.Flush()
			}
			return
		}
		for _, ev := range pg.Events {
			if send("change", ev, pg.NextCursor) != nil {
				return
			}
		}
		cursor = pg.NextCursor
		if len(pg.Events) > 0 || time.Since(lastBeat) > 10*time.Second {
			if len(pg.Events) == 0 {
				fmt.Fprint(w, ": beat\n\n")
			}
			lastBeat = time.Now()
			if rc.Flush() != nil {
				return
			}
		}
	}
}
