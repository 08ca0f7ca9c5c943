package openapiclient_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/conformance/openapiclient"
)

// The agent the test's server serves, and its token.
const (
	agent = "client"
	token = "openapi-client-test-token-0123456789"
)

// cairnBin is the cairn binary TestMain builds from this checkout.
var cairnBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "openapiclient")
	if err != nil {
		panic(err)
	}
	cairnBin = filepath.Join(dir, "cairn")
	build := exec.Command("go", "build", "-o", cairnBin, "./cmd/cairn")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		panic("go build ./cmd/cairn: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// startServer starts `cairn serve` on a fresh file:// bucket on a free
// loopback port with one token, and returns its base URL once it
// answers.
func startServer(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cairnBin, "serve")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CAIRN_BUCKET=file://"+data, "CAIRN_ADDR=127.0.0.1:0", "CAIRN_TOKENS="+agent+"="+token)
	logs, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	// The first log line says where it listens.
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(logs)
		for sc.Scan() {
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving" {
				addr <- line.Addr
			}
		}
		close(addr)
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			t.Fatal("cairn serve exited before it served")
		}
		return "http://" + a
	case <-time.After(time.Minute):
		t.Fatal("cairn serve did not say where it listens")
	}
	return ""
}

// TestServedDocumentIsTheCommittedOne: the client was generated from the
// document the server serves now (generate.sh regenerates both).
func TestServedDocumentIsTheCommittedOne(t *testing.T) {
	base := startServer(t)
	resp, err := http.Get(base + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var served bytes.Buffer
	if _, err := served.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(served.Bytes(), committed) {
		t.Fatal("the served /openapi.json differs from openapi.json: run conformance/openapiclient/generate.sh")
	}
}

// client is the generated client, bearing the agent's token.
func client(t *testing.T, base string) *openapiclient.ClientWithResponses {
	t.Helper()
	c, err := openapiclient.NewClientWithResponses(base, openapiclient.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+token)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// answer is what every generated response has.
type answer interface {
	StatusCode() int
}

// must fails the test unless the call returned 200 with a typed result.
func must[R answer](t *testing.T, tool string, r R, err error, result func(R) bool) R {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if r.StatusCode() != http.StatusOK || !result(r) {
		t.Fatalf("%s: status %d, no typed result", tool, r.StatusCode())
	}
	t.Logf("%-20s %d, a typed %T", tool, r.StatusCode(), r)
	return r
}

func ptr[T any](v T) *T { return &v }

func digestURI(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// TestAllToolsThroughTheGeneratedClient calls the 18 tools through the
// generated client's typed methods against a real `cairn serve`, and
// checks typed result fields; then one error, decoded as the error
// envelope.
func TestAllToolsThroughTheGeneratedClient(t *testing.T) {
	ctx := t.Context()
	c := client(t, startServer(t))
	files(ctx, t, c)
	reads(ctx, t, c)
	queries(ctx, t, c)
	history(ctx, t, c)

	// An error: a create-only put onto an existing file is 409 with the
	// envelope, typed.
	r, err := c.WorkbenchPutFileWithResponse(ctx, agent, nil, openapiclient.WorkbenchPutFileJSONRequestBody{
		Id: "wb", Section: openapiclient.WorkbenchPutFileJSONBodySectionOutputs, Path: "report.txt", Text: ptr("again"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.StatusCode() != http.StatusConflict || r.JSON409 == nil || r.JSON200 != nil {
		t.Fatalf("put onto an existing file: status %d: %s", r.StatusCode(), r.Body)
	}
	if e := r.JSON409; e.Status != openapiclient.Error || e.Code != "AlreadyExists" || e.Retryable || e.Message == "" {
		t.Fatalf("envelope %+v", e)
	}
	// And without the token: 401, the envelope.
	anon, err := openapiclient.NewClientWithResponses(strings.TrimSuffix(c.ClientInterface.(*openapiclient.Client).Server, "/"))
	if err != nil {
		t.Fatal(err)
	}
	u, err := anon.WorkbenchCreateWithResponse(ctx, agent, nil, openapiclient.WorkbenchCreateJSONRequestBody{Id: "wb"})
	if err != nil || u.StatusCode() != http.StatusUnauthorized || u.JSON401 == nil || u.JSON401.Code == "" {
		t.Fatalf("no token: %v %d %s", err, u.StatusCode(), u.Body)
	}
}

func files(ctx context.Context, t *testing.T, c *openapiclient.ClientWithResponses) {
	cr, err := c.WorkbenchCreateWithResponse(ctx, agent, nil, openapiclient.WorkbenchCreateJSONRequestBody{Id: "wb"})
	created := must(t, "create", cr, err, func(r *openapiclient.WorkbenchCreateResponse) bool { return r.JSON200 != nil }).JSON200
	if created.Status != openapiclient.WorkbenchCreateResultStatusSuccess || created.WorkbenchId != "wb" || len(created.Sections) != 5 ||
		created.Sections[0] != openapiclient.WorkbenchCreateResultSectionsInput || created.Path != "/agents/"+agent+"/wb/wb" {
		t.Fatalf("create %+v", created)
	}

	body := "Hello world\nsecond\nthird\n"
	pr, err := c.WorkbenchPutFileWithResponse(ctx, agent, &openapiclient.WorkbenchPutFileParams{IdempotencyKey: ptr("put-1")}, openapiclient.WorkbenchPutFileJSONRequestBody{
		Id: "wb", Section: openapiclient.WorkbenchPutFileJSONBodySectionOutputs, Path: "report.txt", Text: &body,
	})
	put := must(t, "put_file", pr, err, func(r *openapiclient.WorkbenchPutFileResponse) bool { return r.JSON200 != nil }).JSON200
	if put.Generation == 0 || put.SizeBytes != uint64(len(body)) || put.DigestUri != digestURI([]byte(body)) || put.Replace ||
		put.Section != openapiclient.WorkbenchPutFileResultSectionOutputs || put.RelativePath != "report.txt" {
		t.Fatalf("put_file %+v", put)
	}

	ar, err := c.WorkbenchAppendWithResponse(ctx, agent, nil, openapiclient.WorkbenchAppendJSONRequestBody{
		Id: "wb", Section: openapiclient.WorkbenchAppendJSONBodySectionLogs, Path: "run.log", Text: ptr("started\n"),
	})
	app := must(t, "append", ar, err, func(r *openapiclient.WorkbenchAppendResponse) bool { return r.JSON200 != nil }).JSON200
	if !app.Created || app.AppendedBytes != 8 || app.SizeBytes != 8 || app.Digest != digestURI([]byte("started\n")) {
		t.Fatalf("append %+v", app)
	}

	er, err := c.WorkbenchEditWithResponse(ctx, agent, nil, openapiclient.WorkbenchEditJSONRequestBody{
		Id: "wb", Section: openapiclient.WorkbenchEditJSONBodySectionOutputs, Path: "report.txt", OldString: "world", NewString: "there",
	})
	edit := must(t, "edit", er, err, func(r *openapiclient.WorkbenchEditResponse) bool { return r.JSON200 != nil }).JSON200
	if edit.Replacements != 1 || edit.NoChange || edit.Generation <= put.Generation || edit.SizeBytes != put.SizeBytes {
		t.Fatalf("edit %+v", edit)
	}
}

func reads(ctx context.Context, t *testing.T, c *openapiclient.ClientWithResponses) {
	lr, err := c.WorkbenchListWithResponse(ctx, agent, nil, openapiclient.WorkbenchListJSONRequestBody{Id: "wb", Limit: ptr(uint64(2))})
	list := must(t, "list", lr, err, func(r *openapiclient.WorkbenchListResponse) bool { return r.JSON200 != nil }).JSON200
	if list.EntryCount != 2 || len(list.Entries) != 2 || !list.Truncated || list.NextCursor == nil || list.Section != nil || list.AtSnapshot != nil ||
		list.Entries[0].Name != "input" || list.Entries[0].Kind != openapiclient.WorkbenchListEntryKindDirectory || list.Entries[0].SizeBytes != nil {
		t.Fatalf("list %+v", list)
	}
	lr, err = c.WorkbenchListWithResponse(ctx, agent, nil, openapiclient.WorkbenchListJSONRequestBody{Id: "wb", Limit: ptr(uint64(2)), Cursor: list.NextCursor})
	next := must(t, "list with a cursor", lr, err, func(r *openapiclient.WorkbenchListResponse) bool { return r.JSON200 != nil }).JSON200
	if len(next.Entries) != 2 || next.Entries[0].Name != "metadata" {
		t.Fatalf("list with a cursor %+v", next)
	}

	sr, err := c.WorkbenchStatWithResponse(ctx, agent, nil, openapiclient.WorkbenchStatJSONRequestBody{
		Id: "wb", Section: ptr(openapiclient.WorkbenchStatJSONBodySectionOutputs), Path: ptr("report.txt"),
	})
	card := must(t, "stat", sr, err, func(r *openapiclient.WorkbenchStatResponse) bool { return r.JSON200 != nil }).JSON200.Card
	if card.Kind != openapiclient.WorkbenchStatCardKindFile || card.Generation == nil || card.SizeBytes == nil || *card.SizeBytes != 25 ||
		card.DigestUri == nil || card.ContentType == nil || card.Producer != nil || card.EntryCount != nil {
		t.Fatalf("stat card %+v", card)
	}

	rr, err := c.WorkbenchReadWithResponse(ctx, agent, nil, openapiclient.WorkbenchReadJSONRequestBody{
		Id: "wb", Section: openapiclient.WorkbenchReadJSONBodySectionOutputs, Path: "report.txt", Limit: ptr(uint64(2)),
	})
	read := must(t, "read", rr, err, func(r *openapiclient.WorkbenchReadResponse) bool { return r.JSON200 != nil }).JSON200
	page, err := read.AsWorkbenchReadPage()
	if err != nil || page.Format != openapiclient.WorkbenchReadPageFormatStructured || page.RecordType == nil ||
		*page.RecordType != openapiclient.TextLines || page.RecordCount == nil || *page.RecordCount != 3 ||
		len(page.Items) != 2 || page.Items[0].Value != "Hello there" || page.Items[1].Index != 1 || !page.Truncated || page.Bytes != nil {
		t.Fatalf("read %+v %v", page, err)
	}
	rr, err = c.WorkbenchReadWithResponse(ctx, agent, nil, openapiclient.WorkbenchReadJSONRequestBody{
		Id: "wb", Section: openapiclient.WorkbenchReadJSONBodySectionOutputs, Path: "report.txt", IfNoneMatch: card.Generation,
	})
	nm, err := must(t, "read if_none_match", rr, err, func(r *openapiclient.WorkbenchReadResponse) bool { return r.JSON200 != nil }).JSON200.AsWorkbenchReadNotModified()
	if err != nil || !bool(nm.NotModified) || nm.Generation != *card.Generation {
		t.Fatalf("read not modified %+v %v", nm, err)
	}
	rr, err = c.WorkbenchReadWithResponse(ctx, agent, nil, openapiclient.WorkbenchReadJSONRequestBody{
		Id: "wb", Section: openapiclient.WorkbenchReadJSONBodySectionOutputs, Path: "report.txt",
		Format: ptr(openapiclient.WorkbenchReadJSONBodyFormatBytes), Offset: ptr(uint64(6)), Limit: ptr(uint64(5)),
	})
	bytesPage, err := must(t, "read bytes", rr, err, func(r *openapiclient.WorkbenchReadResponse) bool { return r.JSON200 != nil }).JSON200.AsWorkbenchReadPage()
	if err != nil || bytesPage.Bytes == nil || *bytesPage.Bytes != "dGhlcmU=" || bytesPage.BytesEncoding == nil || bytesPage.RecordType != nil {
		t.Fatalf("read bytes %+v %v", bytesPage, err)
	}

	gr, err := c.WorkbenchGrepWithResponse(ctx, agent, nil, openapiclient.WorkbenchGrepJSONRequestBody{Id: "wb", Pattern: "THIRD|start", Recursive: true})
	grep := must(t, "grep", gr, err, func(r *openapiclient.WorkbenchGrepResponse) bool { return r.JSON200 != nil }).JSON200
	if len(grep.Matches) != 2 || grep.FilesScanned != 2 || grep.Matches[0].Snippet != "started" || grep.Matches[1].LineNumber != 3 || grep.Truncated {
		t.Fatalf("grep %+v", grep)
	}
}

func queries(ctx context.Context, t *testing.T, c *openapiclient.ClientWithResponses) {
	var value openapiclient.WorkbenchSearchJSONBody_Predicates_Value
	if err := value.FromWorkbenchSearchJSONBodyPredicatesValue1(20); err != nil {
		t.Fatal(err)
	}
	preds := []struct {
		Field string                                                  `json:"field"`
		Op    openapiclient.WorkbenchSearchJSONBodyPredicatesOp       `json:"op"`
		Value *openapiclient.WorkbenchSearchJSONBody_Predicates_Value `json:"value,omitempty"`
	}{{Field: "logical_size", Op: openapiclient.WorkbenchSearchJSONBodyPredicatesOpGt, Value: &value}}
	sr, err := c.WorkbenchSearchWithResponse(ctx, agent, nil, openapiclient.WorkbenchSearchJSONRequestBody{
		Predicates: &preds, Fields: &[]string{"logical_size", "producer"}, Facets: &[]string{"content_type"},
	})
	search := must(t, "search", sr, err, func(r *openapiclient.WorkbenchSearchResponse) bool { return r.JSON200 != nil }).JSON200
	if search.MatchCount != 1 || len(search.Matches) != 1 || search.Matches[0].RelativePath == nil || *search.Matches[0].RelativePath != "report.txt" ||
		len(search.Facets) != 1 || search.Facets[0].DistinctCount != 1 || search.Facets[0].Values[0].Count != 1 {
		t.Fatalf("search %+v", search)
	}
	size, err := search.Matches[0].Values["logical_size"].AsMetadataValue1()
	if err != nil || size != 25 {
		t.Fatalf("search value logical_size %v %v", size, err)
	}

	ag, err := c.WorkbenchAggregateWithResponse(ctx, agent, nil, openapiclient.WorkbenchAggregateJSONRequestBody{
		Id: ptr("wb"),
		Measures: []struct {
			Field *string                                            `json:"field,omitempty"`
			Name  string                                             `json:"name"`
			Op    openapiclient.WorkbenchAggregateJSONBodyMeasuresOp `json:"op"`
		}{{Name: "n", Op: openapiclient.Count}, {Name: "bytes", Op: openapiclient.Sum, Field: ptr("logical_size")}},
	})
	agg := must(t, "aggregate", ag, err, func(r *openapiclient.WorkbenchAggregateResponse) bool { return r.JSON200 != nil }).JSON200
	if agg.InputMatchCount != 2 || agg.GroupCount != 1 || len(agg.Groups) != 1 || len(agg.Groups[0].Key) != 0 {
		t.Fatalf("aggregate %+v", agg)
	}
	if n, err := agg.Groups[0].Values["bytes"].AsMetadataValue1(); err != nil || n != 33 {
		t.Fatalf("aggregate sum %v %v", n, err)
	}

	cr, err := c.WorkbenchCatalogWithResponse(ctx, agent, nil, openapiclient.WorkbenchCatalogJSONRequestBody{})
	cat := must(t, "catalog", cr, err, func(r *openapiclient.WorkbenchCatalogResponse) bool { return r.JSON200 != nil }).JSON200
	if cat.CatalogEmpty || len(cat.Catalog.Filterable) == 0 || len(cat.Catalog.Sortable) == 0 || len(cat.ChildCatalogs) != 0 ||
		cat.Catalog.Filterable[0].Operators[0] != openapiclient.WorkbenchCatalogFilterOperatorsEq {
		t.Fatalf("catalog %+v", cat)
	}
}

func history(ctx context.Context, t *testing.T, c *openapiclient.ClientWithResponses) {
	commitBody := openapiclient.WorkbenchCommitJSONRequestBody{
		Id: "wb", Manifest: map[string]any{"task": "client"}, ContentDigestUri: digestURI([]byte("client")),
	}
	cm, err := c.WorkbenchCommitWithResponse(ctx, agent, nil, commitBody)
	commit := must(t, "commit", cm, err, func(r *openapiclient.WorkbenchCommitResponse) bool { return r.JSON200 != nil }).JSON200
	if commit.IdempotentReplay || len(commit.CommitIdentity) != 64 || commit.Path != "/agents/"+agent+"/wb/wb/metadata/run_manifest.json" {
		t.Fatalf("commit %+v", commit)
	}
	cm, err = c.WorkbenchCommitWithResponse(ctx, agent, nil, commitBody)
	if replay := must(t, "commit replay", cm, err, func(r *openapiclient.WorkbenchCommitResponse) bool { return r.JSON200 != nil }).JSON200; !replay.IdempotentReplay || replay.CommitIdentity != commit.CommitIdentity {
		t.Fatalf("commit replay %+v", replay)
	}

	fr, err := c.WorkbenchFindWithResponse(ctx, agent, nil, openapiclient.WorkbenchFindJSONRequestBody{IncludeManifest: ptr(true)})
	find := must(t, "find", fr, err, func(r *openapiclient.WorkbenchFindResponse) bool { return r.JSON200 != nil }).JSON200
	if find.MatchCount != 1 || !find.Matches[0].Committed || !find.Matches[0].CommitIdentityVerified || find.Matches[0].ManifestSummary == nil ||
		find.Matches[0].ManifestSummary.ManifestTask != "client" || find.Matches[0].Manifest == nil || find.Matches[0].CommitIdentity == nil || *find.Matches[0].CommitIdentity != commit.CommitIdentity {
		t.Fatalf("find %+v", find)
	}

	sn, err := c.WorkbenchSnapshotWithResponse(ctx, agent, nil, openapiclient.WorkbenchSnapshotJSONRequestBody{
		Id: "wb", Name: ptr("before"), TtlDays: ptr(uint64(3)), Reason: ptr("client"), Metadata: &map[string]any{"suite": "openapi"},
	})
	snap := must(t, "snapshot", sn, err, func(r *openapiclient.WorkbenchSnapshotResponse) bool { return r.JSON200 != nil }).JSON200
	if snap.State != openapiclient.WorkbenchSnapshotResultStateAlive || snap.Name == nil || *snap.Name != "before" || snap.TtlDays != 3 ||
		snap.ExpiryWarning != nil || snap.Annotation.Reason == nil || *snap.Annotation.Reason != "client" || snap.LeaseExpiresAt != snap.LeaseExpiresUnixMs {
		t.Fatalf("snapshot %+v", snap)
	}
	rn, err := c.WorkbenchSnapshotRenewWithResponse(ctx, agent, nil, openapiclient.WorkbenchSnapshotRenewJSONRequestBody{
		Id: "wb", SnapshotId: &snap.SnapshotId, TtlDays: ptr(uint64(5)),
	})
	renew := must(t, "snapshot_renew", rn, err, func(r *openapiclient.WorkbenchSnapshotRenewResponse) bool { return r.JSON200 != nil }).JSON200
	if !bool(renew.Renewed) || renew.SnapshotId != snap.SnapshotId || renew.LeaseExpiresAt <= snap.LeaseExpiresAt {
		t.Fatalf("snapshot_renew %+v", renew)
	}

	var at openapiclient.WorkbenchRestoreJSONBody_AtSnapshot
	if err := at.FromWorkbenchRestoreJSONBodyAtSnapshot1("before"); err != nil {
		t.Fatal(err)
	}
	rs, err := c.WorkbenchRestoreWithResponse(ctx, agent, nil, openapiclient.WorkbenchRestoreJSONRequestBody{Id: "wb", DestinationId: "copy", AtSnapshot: &at})
	restore := must(t, "restore", rs, err, func(r *openapiclient.WorkbenchRestoreResponse) bool { return r.JSON200 != nil }).JSON200
	if restore.State != openapiclient.Complete || restore.SnapshotId == nil || *restore.SnapshotId != snap.SnapshotId || restore.CommitId != nil ||
		len(restore.OperationId) != 32 || restore.IdempotentReplay || restore.DestinationWorkbenchId != "copy" {
		t.Fatalf("restore %+v", restore)
	}

	rt, err := c.WorkbenchSnapshotRetireWithResponse(ctx, agent, nil, openapiclient.WorkbenchSnapshotRetireJSONRequestBody{Id: "wb", Name: ptr("before"), Reason: ptr("done")})
	retire := must(t, "snapshot_retire", rt, err, func(r *openapiclient.WorkbenchSnapshotRetireResponse) bool { return r.JSON200 != nil }).JSON200
	if !retire.Retired || retire.State != openapiclient.WorkbenchSnapshotRetireResultStateRetired || retire.RetireAnnotation == nil || retire.RetireAnnotation.Reason != "done" {
		t.Fatalf("snapshot_retire %+v", retire)
	}

	sl, err := c.WorkbenchSnapshotListWithResponse(ctx, agent, nil, openapiclient.WorkbenchSnapshotListJSONRequestBody{Id: "wb"})
	list := must(t, "snapshot_list", sl, err, func(r *openapiclient.WorkbenchSnapshotListResponse) bool { return r.JSON200 != nil }).JSON200
	if list.SnapshotCount != 1 || len(list.Snapshots) != 1 || list.Snapshots[0].SnapshotId != snap.SnapshotId ||
		list.Snapshots[0].State != openapiclient.WorkbenchSnapshotInfoStateRetired || list.Snapshots[0].RetireAnnotation == nil {
		t.Fatalf("snapshot_list %+v", list)
	}
}
