package serve

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/workbench"
)

// The pages of the console (console.go): each handler reads through the
// agent's Service and renders one template of console/pages.html.

// consoleListLimit is a listing page's size: the contract's cap.
const consoleListLimit = 100

type homePage struct {
	Agents      []string
	OpenAgents  bool // Agents are the agents open in this process (no tokens)
	Maintenance []Sample
}

func (c *console) serveHome(w http.ResponseWriter, r *http.Request, se *session) {
	p := homePage{Agents: se.Agents}
	if se.All {
		p.OpenAgents = true
		for _, a := range c.s.pool.open() {
			p.Agents = append(p.Agents, a.id)
		}
		slices.Sort(p.Agents)
	}
	if c.s.opts.ExtraMetrics != nil {
		p.Maintenance = c.s.opts.ExtraMetrics()
	}
	c.render(w, r, se, "home", p)
}

// serveOpenAgent sends the form of the home page ("open agent …") to
// the agent's page.
func (c *console) serveOpenAgent(w http.ResponseWriter, r *http.Request, se *session) {
	id := strings.TrimSpace(r.URL.Query().Get("agent"))
	if id == "" {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, agentHref(id), http.StatusSeeOther)
}

// serveOpenWorkbench sends the agent page's form ("open workbench …")
// to the workbench's page: find pages workbenches in its own order, and
// an agent may have many.
func (c *console) serveOpenWorkbench(w http.ResponseWriter, r *http.Request, se *session) {
	agent, id := r.PathValue("agent"), strings.TrimSpace(r.URL.Query().Get("id"))
	if id == "" {
		http.Redirect(w, r, agentHref(agent), http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, wbHref(agent, id), http.StatusSeeOther)
}

type agentPage struct {
	Agent       string
	Workbenches []workbench.FindMatch
	Cursor      string
	NextCursor  string
	Events      string // the live tail's source
}

func (c *console) serveAgent(w http.ResponseWriter, r *http.Request, se *session) {
	c.reading(w, r, se, func(ctx context.Context, a *agent) {
		cursor, cur := cursorParam(r)
		res, err := a.svc.Find(ctx, workbench.FindInput{Limit: ptr(uint64(50)), Cursor: cur})
		if err != nil {
			c.failErr(w, r, se, err)
			return
		}
		p := agentPage{Agent: a.id, Workbenches: res.Matches, Cursor: cursor, Events: agentHref(a.id) + "events"}
		if res.NextCursor != nil {
			p.NextCursor = *res.NextCursor
		}
		c.render(w, r, se, "agent", p, crumb{a.id, agentHref(a.id)})
	})
}

type workbenchPage struct {
	Agent     string
	View      *workbench.WorkbenchView
	Sections  []workbench.ListEntry
	Snapshots []workbench.SnapshotInfo
	Now       int64 // Unix ms, for the leases
	Manifest  *renderedBody
	Restored  *renderedBody
	Events    string
}

func (c *console) serveWorkbench(w http.ResponseWriter, r *http.Request, se *session) {
	c.reading(w, r, se, func(ctx context.Context, a *agent) {
		id := r.PathValue("wb")
		v, err := a.svc.Inspect(ctx, id)
		if err != nil {
			c.failErr(w, r, se, err)
			return
		}
		p := workbenchPage{Agent: a.id, View: v, Now: time.Now().UnixMilli(), Events: agentHref(a.id) + "events?wb=" + url.QueryEscape(id)}
		list, err := a.svc.List(ctx, workbench.ListInput{ID: id})
		if err != nil {
			c.failErr(w, r, se, err)
			return
		}
		p.Sections = list.Entries
		snaps, err := a.svc.SnapshotList(ctx, workbench.SnapshotListInput{ID: id})
		if err != nil {
			c.failErr(w, r, se, err)
			return
		}
		p.Snapshots = snaps.Snapshots
		// The run manifest and the restore manifest are files of the
		// metadata section; either may be missing.
		for _, m := range []struct {
			rel string
			to  **renderedBody
		}{{"run_manifest.json", &p.Manifest}, {"restore_manifest.json", &p.Restored}} {
			b, err := a.svc.ReadBody(ctx, workbench.BodyInput{ID: id, Section: "metadata", Path: m.rel, Max: consoleBodyShown})
			if err == nil {
				*m.to = renderBody(a.id, id, "metadata/"+m.rel, b)
			} else if werr := workbench.FromError(err); werr.Code != workbench.CodeNotFound {
				c.failErr(w, r, se, err)
				return
			}
		}
		c.render(w, r, se, "workbench", p, crumb{a.id, agentHref(a.id)}, crumb{id, wbHref(a.id, id)})
	})
}

type commitPage struct {
	Agent, Workbench string
	Page             *workbench.MembersPage
	Commit, Cursor   string // as asked: the commit (empty: the last) and the cursor
}

func (c *console) serveCommit(w http.ResponseWriter, r *http.Request, se *session) {
	c.reading(w, r, se, func(ctx context.Context, a *agent) {
		id := r.PathValue("wb")
		q := r.URL.Query()
		commit, cursor := q.Get("c"), q.Get("cursor")
		pg, err := a.svc.CommitMembersPage(ctx, id, commit, cursor, consoleListLimit)
		if err != nil {
			c.failErr(w, r, se, err)
			return
		}
		c.render(w, r, se, "commit", commitPage{Agent: a.id, Workbench: id, Page: pg, Commit: commit, Cursor: cursor},
			crumb{a.id, agentHref(a.id)}, crumb{id, wbHref(a.id, id)}, crumb{"commit", ""})
	})
}

type listPage struct {
	Agent, Workbench, Path string
	Entries                []workbench.ListEntry
	Cursor, NextCursor     string
}

func (c *console) serveList(w http.ResponseWriter, r *http.Request, se *session) {
	c.reading(w, r, se, func(ctx context.Context, a *agent) {
		id, p := r.PathValue("wb"), strings.TrimSuffix(r.PathValue("path"), "/")
		in := workbench.ListInput{ID: id, Limit: ptr(uint64(consoleListLimit))}
		if p != "" {
			section, rel, _ := strings.Cut(p, "/")
			in.Section, in.Path = &section, rel
		}
		cursor, cur := cursorParam(r)
		in.Cursor = cur
		res, err := a.svc.List(ctx, in)
		if err != nil {
			c.failErr(w, r, se, err)
			return
		}
		lp := listPage{Agent: a.id, Workbench: id, Path: p, Entries: res.Entries, Cursor: cursor}
		if res.NextCursor != nil {
			lp.NextCursor = *res.NextCursor
		}
		c.render(w, r, se, "list", lp, pathCrumbs(a.id, id, p)...)
	})
}

type filePage struct {
	Agent, Workbench, Path string
	Body                   *renderedBody
	History                *fileHistory
}

func (c *console) serveFile(w http.ResponseWriter, r *http.Request, se *session) {
	c.reading(w, r, se, func(ctx context.Context, a *agent) {
		id, p := r.PathValue("wb"), r.PathValue("path")
		section, rel, _ := strings.Cut(p, "/")
		b, err := a.svc.ReadBody(ctx, workbench.BodyInput{ID: id, Section: section, Path: rel, Max: consoleBodyShown})
		if err != nil {
			c.failErr(w, r, se, err)
			return
		}
		h, err := historyOf(ctx, a.svc, id, section, rel)
		if err != nil {
			c.failErr(w, r, se, err)
			return
		}
		c.render(w, r, se, "file", filePage{Agent: a.id, Workbench: id, Path: p, Body: renderBody(a.id, id, p, b), History: h},
			pathCrumbs(a.id, id, p)...)
	})
}

// serveRaw sends a file's bytes: as a download, or, for the raster
// image types a page shows inline (?inline=1), as the image.
func (c *console) serveRaw(w http.ResponseWriter, r *http.Request, se *session) {
	c.reading(w, r, se, func(ctx context.Context, a *agent) {
		id, p := r.PathValue("wb"), r.PathValue("path")
		section, rel, _ := strings.Cut(p, "/")
		b, err := a.svc.ReadBody(ctx, workbench.BodyInput{ID: id, Section: section, Path: rel})
		if err != nil {
			c.failErr(w, r, se, err)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
		ct := deref(b.Card.ContentType)
		if r.URL.Query().Get("inline") == "1" && inlineImage(ct) {
			h.Set("Content-Type", strings.ToLower(ct))
		} else {
			h.Set("Content-Type", "application/octet-stream")
			name := p[strings.LastIndexByte(p, '/')+1:]
			h.Set("Content-Disposition", "attachment; filename*=UTF-8''"+url.PathEscape(name))
		}
		h.Set("Content-Length", strconv.Itoa(len(b.Bytes)))
		if g := b.Card.Generation; g != nil {
			h.Set("ETag", `"`+strconv.FormatUint(*g, 10)+`"`)
		}
		w.Write(b.Bytes)
	})
}

type pinsPage struct {
	Agent  string
	Pins   []gcsweep.Pin
	Report *pinReport
}

type pinReport struct {
	Pin      string
	Objects  int64
	Bytes    int64
	Problems []string
	Elapsed  time.Duration
	Created  bool
}

func (c *console) servePins(w http.ResponseWriter, r *http.Request, se *session) {
	c.withAgent(w, r, se, func(a *agent) { c.renderPins(w, r, se, a, nil) })
}

func (c *console) renderPins(w http.ResponseWriter, r *http.Request, se *session, a *agent, rep *pinReport) {
	ctx, cancel := c.requestContext(r)
	defer cancel()
	store := a.svc.Store()
	pins, err := gcsweep.ListPins(ctx, c.s.counted, store.Layout())
	if err != nil {
		c.failErr(w, r, se, err)
		return
	}
	slices.Reverse(pins) // the newest first
	c.render(w, r, se, "pins", pinsPage{Agent: a.id, Pins: pins, Report: rep},
		crumb{a.id, agentHref(a.id)}, crumb{"pins", ""})
}

// serveVerifyPin reads every object the pin keeps and checks it, as
// `cairn pin verify` does: a read, so allowed without ConsoleWrites.
func (c *console) serveVerifyPin(w http.ResponseWriter, r *http.Request, se *session) {
	c.withAgent(w, r, se, func(a *agent) {
		ctx, cancel := c.requestContext(r)
		defer cancel()
		store := a.svc.Store()
		pin, err := gcsweep.ReadPin(ctx, c.s.counted, store.Layout(), r.PathValue("pin"))
		if err != nil {
			c.failErr(w, r, se, err)
			return
		}
		refs, err := workbench.PinBlockRefs(ctx, store, pin.RootHash)
		if err != nil {
			c.failErr(w, r, se, err)
			return
		}
		vr, err := gcsweep.VerifyPin(ctx, c.s.counted, store.Layout(), pin, refs, gcsweep.VerifyOptions{})
		if err != nil {
			c.failErr(w, r, se, err)
			return
		}
		rep := &pinReport{Pin: pin.Name, Objects: vr.Objects, Bytes: vr.Bytes, Elapsed: vr.Elapsed.Round(time.Millisecond), Problems: []string{}}
		for _, p := range vr.Problems {
			rep.Problems = append(rep.Problems, p.String())
		}
		c.renderPins(w, r, se, a, rep)
	})
}

// serveCreatePin pins the agent's current head (a write: writesOnly).
func (c *console) serveCreatePin(w http.ResponseWriter, r *http.Request, se *session) {
	c.withAgent(w, r, se, func(a *agent) {
		ctx, cancel := c.requestContext(r)
		defer cancel()
		r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
		r.ParseForm()
		pin, err := gcsweep.PinHead(ctx, a.svc.Store(), "", r.PostForm.Get("note"), time.Now())
		if err != nil {
			if errors.Is(err, gcsweep.ErrNothingToPin) {
				c.fail(w, r, se, http.StatusConflict, "Agent "+a.id+" has no commit to pin yet.")
				return
			}
			c.failErr(w, r, se, err)
			return
		}
		c.renderPins(w, r, se, a, &pinReport{Pin: pin.Name, Created: true})
	})
}

// serveRetire retires one snapshot (a write: writesOnly).
func (c *console) serveRetire(w http.ResponseWriter, r *http.Request, se *session) {
	c.withAgent(w, r, se, func(a *agent) {
		ctx, cancel := c.requestContext(r)
		defer cancel()
		id := r.PathValue("wb")
		snap, err := strconv.ParseUint(r.PathValue("snap"), 10, 64)
		if err != nil {
			c.fail(w, r, se, http.StatusBadRequest, "A snapshot id is a number.")
			return
		}
		reason := "retired from the console"
		if _, err := a.svc.SnapshotRetire(ctx, workbench.SnapshotRetireInput{ID: id, SnapshotID: &snap, Reason: &reason}); err != nil {
			c.failErr(w, r, se, err)
			return
		}
		http.Redirect(w, r, wbHref(a.id, id), http.StatusSeeOther)
	})
}

// writesOnly refuses a write with 403 unless the server was started
// with ConsoleWrites.
func (c *console) writesOnly(h func(http.ResponseWriter, *http.Request, *session)) func(http.ResponseWriter, *http.Request, *session) {
	return func(w http.ResponseWriter, r *http.Request, se *session) {
		if !c.s.opts.ConsoleWrites {
			c.fail(w, r, se, http.StatusForbidden, "This console is read-only: the server was started without --console-writes.")
			return
		}
		h(w, r, se)
	}
}

// pathCrumbs are the crumbs of a workbench path: each directory links to
// its listing.
func pathCrumbs(agent, wb, p string) []crumb {
	out := []crumb{{agent, agentHref(agent)}, {wb, wbHref(agent, wb)}}
	if p == "" {
		return out
	}
	parts := strings.Split(p, "/")
	for i, part := range parts {
		out = append(out, crumb{part, lsHref(agent, wb, strings.Join(parts[:i+1], "/"))})
	}
	out[len(out)-1].Href = ""
	return out
}

func ptr[T any](v T) *T { return &v }

// cursorParam is the request's ?cursor, as text and as a tool's input
// takes it (nil when absent).
func cursorParam(r *http.Request) (string, *string) {
	c := r.URL.Query().Get("cursor")
	if c == "" {
		return "", nil
	}
	return c, &c
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
