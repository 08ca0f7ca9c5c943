package gcs

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	"github.com/cairnstore/cairn/bucket"
	"github.com/googleapis/gax-go/v2"
	"google.golang.org/api/option"
)

func init() {
	bucket.Register("gs", open)
}

// DefaultReadAttempts is how many attempts the client makes at a read, a
// stat or a list page when Options.ReadAttempts is zero.
const DefaultReadAttempts = 3

// EmulatorFakeGCSServer is the value of a URL's emulator parameter that
// declares the server to be fake-gcs-server (see Options.FakeServer).
const EmulatorFakeGCSServer = "fake-gcs-server"

// fakeGap is the known gap of fake-gcs-server.
const fakeGap = "fake-gcs-server v1.56 ignores generation preconditions on delete"

// Options adjust a Bucket.
type Options struct {
	// FakeServer declares that the client talks to fake-gcs-server, which
	// ignores generation preconditions on delete: the bucket then reports
	// ConditionalDelete false (with a known gap) and refuses conditional
	// deletes with ErrUnsupported. The adapter never detects the fake by
	// itself; whoever starts it says so (in a URL, emulator=fake-gcs-server).
	FakeServer bool

	// ReadAttempts bounds the client's attempts at one read, stat or list
	// page, retries included. Zero means DefaultReadAttempts; 1 turns the
	// client's read retries off. Writes are never retried.
	ReadAttempts int
}

// Bucket is a GCS bucket, or the part of one under a prefix.
type Bucket struct {
	client *storage.Client
	owned  bool // Close closes client
	name   string
	prefix string
	fake   bool

	reads  *storage.BucketHandle // bounded retries
	writes *storage.BucketHandle // no retries
}

var _ bucket.Bucket = (*Bucket)(nil)

// New returns a Bucket over an existing client that keeps its keys under
// prefix ("" or a string ending in "/") of the GCS bucket name. The client
// should read through the JSON API (storage.WithJSONReads) when it talks to
// a custom endpoint. Close does not close the client: its owner does.
func New(client *storage.Client, name, prefix string, opts Options) (*Bucket, error) {
	if client == nil {
		return nil, errors.New("gcs: nil client")
	}
	if name == "" || strings.ContainsAny(name, "/?#") {
		return nil, fmt.Errorf("gcs: bad bucket name %q", name)
	}
	if prefix != "" {
		if p, err := bucket.NormalizePrefix(prefix); err != nil || p != prefix {
			return nil, fmt.Errorf("gcs: bad prefix %q: want \"\" or a key ending in /", prefix)
		}
	}
	attempts := opts.ReadAttempts
	switch {
	case attempts < 0:
		return nil, fmt.Errorf("gcs: negative ReadAttempts %d", attempts)
	case attempts == 0:
		attempts = DefaultReadAttempts
	}
	// Client.Bucket gives each handle its own copy of the retry settings,
	// so the two handles do not disturb each other. (ObjectHandle.Retryer
	// would change the settings it inherits, so it is never used.)
	return &Bucket{
		client: client,
		name:   name,
		prefix: prefix,
		fake:   opts.FakeServer,
		reads: client.Bucket(name).Retryer(
			storage.WithPolicy(storage.RetryIdempotent),
			storage.WithMaxAttempts(attempts),
			storage.WithBackoff(gax.Backoff{Initial: 100 * time.Millisecond, Max: 2 * time.Second, Multiplier: 2}),
		),
		writes: client.Bucket(name).Retryer(storage.WithPolicy(storage.RetryNever)),
	}, nil
}

func open(ctx context.Context, u *url.URL) (bucket.Bucket, error) {
	q, err := bucket.Query(u, "endpoint", "emulator")
	if err != nil {
		return nil, fmt.Errorf("gcs: %w", err)
	}
	if u.Host == "" {
		return nil, errors.New("gcs: want gs://BUCKET[/PREFIX]")
	}
	prefix, err := bucket.NormalizePrefix(u.Path)
	if err != nil {
		return nil, fmt.Errorf("gcs: %w", err)
	}
	// The client's default telemetry wraps every request in OpenTelemetry
	// instrumentation that cairn never exports: 7.6% of a served put's
	// CPU (docs/bucket.md).
	copts := []option.ClientOption{storage.WithJSONReads(), option.WithTelemetryDisabled()}
	ep, custom := q["endpoint"]
	if custom {
		root, err := endpointRoot(ep)
		if err != nil {
			return nil, err
		}
		copts = append(copts, option.WithEndpoint(root+"/storage/v1/"), option.WithoutAuthentication())
	}
	var opts Options
	if em, ok := q["emulator"]; ok {
		if em != EmulatorFakeGCSServer {
			return nil, fmt.Errorf("gcs: emulator %q: the only one known is %q", em, EmulatorFakeGCSServer)
		}
		if !custom && os.Getenv("STORAGE_EMULATOR_HOST") == "" {
			return nil, errors.New("gcs: emulator without an endpoint or STORAGE_EMULATOR_HOST")
		}
		opts.FakeServer = true
	}
	client, err := storage.NewClient(ctx, copts...)
	if err != nil {
		return nil, fmt.Errorf("gcs: new client: %w", err)
	}
	b, err := New(client, u.Host, prefix, opts)
	if err != nil {
		client.Close()
		return nil, err
	}
	b.owned = true
	return b, nil
}

// endpointRoot checks an endpoint parameter and returns it without a
// trailing slash.
func endpointRoot(ep string) (string, error) {
	e, err := url.Parse(ep)
	if err != nil {
		return "", fmt.Errorf("gcs: endpoint %q: %w", ep, err)
	}
	if (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" || e.RawQuery != "" || e.Fragment != "" || e.User != nil {
		return "", fmt.Errorf("gcs: endpoint %q: want http(s)://HOST[:PORT][/PATH]", ep)
	}
	return strings.TrimRight(ep, "/"), nil
}

// key validates key and returns the object name it maps to; a done
// context is an error too, so nothing is sent.
func (b *Bucket) key(ctx context.Context, op, key string) (string, error) {
	k, err := bucket.JoinKey(b.prefix, key)
	if err != nil {
		return "", fmt.Errorf("gcs: %s %q: %w", op, key, err)
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("gcs: %s %q: %w", op, key, err)
	}
	return k, nil
}

// generation parses a Version this adapter handed out.
func generation(v bucket.Version) (int64, bool) {
	g, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || g <= 0 || strconv.FormatInt(g, 10) != string(v) {
		return 0, false
	}
	return g, true
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func checksum(crc uint32) string { return fmt.Sprintf("crc32c:%08x", crc) }

// modTime is the store's update time as every call reports it.
func modTime(t time.Time) time.Time { return t.Truncate(time.Second).UTC() }

func (b *Bucket) attrs(a *storage.ObjectAttrs) bucket.Attrs {
	return bucket.Attrs{
		Key:      strings.TrimPrefix(a.Name, b.prefix),
		Size:     a.Size,
		Version:  bucket.Version(strconv.FormatInt(a.Generation, 10)),
		ModTime:  modTime(a.Updated),
		Checksum: checksum(a.CRC32C),
	}
}

// Get implements bucket.Bucket.
func (b *Bucket) Get(ctx context.Context, key string) ([]byte, bucket.Attrs, error) {
	k, err := b.key(ctx, "get", key)
	if err != nil {
		return nil, bucket.Attrs{}, err
	}
	// The adapter checks the CRC32C itself, to report ErrIntegrity.
	r, err := b.reads.Object(k).NewReader(ctx, storage.WithDisableReaderChecksum())
	if err != nil {
		return nil, bucket.Attrs{}, fail(ctx, "get", key, false, err)
	}
	body, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		if notFound(err) {
			// The object was there when the read began: the client's
			// retry of a broken body asks for the generation it began
			// with, and a newer one (or a delete) landed meanwhile. The
			// key is not missing; another read will tell what it holds.
			return nil, bucket.Attrs{}, wrap(ctx, "get", key, bucket.ErrUnavailable, fmt.Errorf("replaced while it was read: %w", err))
		}
		return nil, bucket.Attrs{}, fail(ctx, "get", key, false, err)
	}
	ra := r.Attrs
	crc := crc32.Checksum(body, castagnoli)
	// A zero CRC32C in the attributes means the server sent none (or the
	// body's CRC is zero, as for an empty body): nothing to compare.
	if ra.CRC32C != 0 && !ra.Decompressed && crc != ra.CRC32C {
		return nil, bucket.Attrs{}, fmt.Errorf("gcs: get %q: %w: crc32c %08x, server says %08x", key, bucket.ErrIntegrity, crc, ra.CRC32C)
	}
	a := bucket.Attrs{
		Key:      key,
		Size:     int64(len(body)),
		Version:  bucket.Version(strconv.FormatInt(ra.Generation, 10)),
		ModTime:  modTime(ra.LastModified),
		Checksum: checksum(crc),
	}
	if ra.LastModified.IsZero() {
		// No Last-Modified header (GCS sends one): ask for this
		// generation's metadata. If it is already gone, the time stays
		// unknown rather than failing a read that succeeded.
		oa, err := b.reads.Object(k).Generation(ra.Generation).Attrs(ctx)
		switch {
		case err == nil:
			a.ModTime = modTime(oa.Updated)
		case !notFound(err):
			return nil, bucket.Attrs{}, fail(ctx, "get", key, false, err)
		}
	}
	return body, a, nil
}

// Stat implements bucket.Bucket.
func (b *Bucket) Stat(ctx context.Context, key string) (bucket.Attrs, error) {
	k, err := b.key(ctx, "stat", key)
	if err != nil {
		return bucket.Attrs{}, err
	}
	oa, err := b.reads.Object(k).Attrs(ctx)
	if err != nil {
		return bucket.Attrs{}, fail(ctx, "stat", key, false, err)
	}
	return b.attrs(oa), nil
}

// Put implements bucket.Bucket.
func (b *Bucket) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	k, err := b.key(ctx, "put", key)
	if err != nil {
		return bucket.Attrs{}, err
	}
	obj := b.writes.Object(k)
	switch v, ok := cond.Version(); {
	case cond.IsAbsent():
		obj = obj.If(storage.Conditions{DoesNotExist: true})
	case ok:
		g, valid := generation(v)
		if !valid {
			return bucket.Attrs{}, fmt.Errorf("gcs: put %q: %w: version %q is not a generation", key, bucket.ErrPrecondition, v)
		}
		obj = obj.If(storage.Conditions{GenerationMatch: g})
	}
	w := obj.NewWriter(ctx)
	w.ChunkSize = 0 // one request, no retry, no chunk buffer
	w.ContentType = "application/octet-stream"
	w.CRC32C = crc32.Checksum(body, castagnoli)
	w.SendCRC32C = true
	_, werr := w.Write(body)
	cerr := w.Close()
	if err := errors.Join(werr, cerr); err != nil {
		if cerr != nil {
			err = cerr // Close has the server's answer
		}
		sentinel := classify(ctx, err, true)
		if sentinel == bucket.ErrNotExist {
			sentinel = bucket.ErrNoBucket // a write names no object that must exist: the bucket is missing
		}
		return bucket.Attrs{}, wrap(ctx, "put", key, sentinel, err)
	}
	a := b.attrs(w.Attrs())
	a.Key = key
	return a, nil
}

// Delete implements bucket.Bucket.
func (b *Bucket) Delete(ctx context.Context, key string, cond bucket.Condition) error {
	k, err := b.key(ctx, "delete", key)
	if err != nil {
		return err
	}
	if cond.IsAbsent() {
		return fmt.Errorf("gcs: delete %q if-absent: %w", key, bucket.ErrUnsupported)
	}
	v, conditional := cond.Version()
	if !conditional {
		err := b.writes.Object(k).Delete(ctx)
		if err == nil || (notFound(err) && ctx.Err() == nil) {
			return nil
		}
		return fail(ctx, "delete", key, true, err)
	}
	if b.fake {
		return fmt.Errorf("gcs: delete %q %s: %w: %s", key, cond, bucket.ErrUnsupported, fakeGap)
	}
	g, valid := generation(v)
	if !valid {
		return fmt.Errorf("gcs: delete %q: %w: version %q is not a generation", key, bucket.ErrPrecondition, v)
	}
	err = b.writes.Object(k).If(storage.Conditions{GenerationMatch: g}).Delete(ctx)
	switch {
	case err == nil:
		return nil
	case notFound(err) && ctx.Err() == nil:
		return wrap(ctx, "delete", key, bucket.ErrPrecondition, err)
	}
	return fail(ctx, "delete", key, true, err)
}

// Capabilities implements bucket.Bucket.
func (b *Bucket) Capabilities() bucket.Capabilities {
	if b.fake {
		return bucket.Capabilities{KnownGaps: map[string]string{"conditional-delete": fakeGap}}
	}
	return bucket.Capabilities{ConditionalDelete: true}
}

// Close implements bucket.Bucket. It closes the client only if Open made
// it.
func (b *Bucket) Close() error {
	if b.owned {
		return b.client.Close()
	}
	return nil
}
