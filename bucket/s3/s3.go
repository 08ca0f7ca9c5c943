package s3

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairnstore/cairn/bucket"
)

// Options adjust a Bucket.
type Options struct {
	// KnownGaps names port behaviours the store behind the client is known
	// not to honour, each with why; Capabilities reports them. Adapters
	// against AWS and faithful stores leave it nil.
	KnownGaps map[string]string
	// NoConditionalDelete declares a store that does not honour If-Match
	// on DeleteObject (some S3-compatible stores delete whatever is
	// there): Capabilities reports no ConditionalDelete, and a Delete
	// with IfVersion is ErrUnsupported without a request, so that no
	// caller believes a delete was conditional when it was not. In a URL,
	// conditional_delete=false.
	NoConditionalDelete bool
}

// Bucket is a bucket.Bucket over one S3 bucket, keeping its keys under a
// prefix.
type Bucket struct {
	client *awss3.Client
	bucket string
	prefix string
	gaps   map[string]string
	// noCondDelete: Options.NoConditionalDelete.
	noCondDelete bool
}

var _ bucket.Bucket = (*Bucket)(nil)

// New returns a Bucket over the S3 bucket name, reached through client,
// keeping its keys under prefix ("" or a string ending in "/"). The caller
// keeps ownership of client.
func New(client *awss3.Client, name, prefix string, opts Options) (*Bucket, error) {
	if client == nil {
		return nil, errors.New("s3: nil client")
	}
	if name == "" {
		return nil, errors.New("s3: empty bucket name")
	}
	if prefix != "" {
		if p, err := bucket.NormalizePrefix(prefix); err != nil || p != prefix {
			return nil, fmt.Errorf("s3: bad prefix %q: want \"\" or a key ending in /", prefix)
		}
	}
	var gaps map[string]string
	if len(opts.KnownGaps) > 0 {
		gaps = make(map[string]string, len(opts.KnownGaps))
		for k, v := range opts.KnownGaps {
			gaps[k] = v
		}
	}
	return &Bucket{client: client, bucket: name, prefix: prefix, gaps: gaps, noCondDelete: opts.NoConditionalDelete}, nil
}

// checksums keeps the SDK to the checksums an operation requires. Left to
// its defaults the SDK adds a CRC32 to every upload (a header over plain
// HTTP, an aws-chunked trailer over TLS) and checks checksums on downloads;
// S3-compatible stores that do not implement those extensions refuse the
// upload or store the chunk framing as the object's bytes. Put sends
// Content-MD5 instead, which every S3 store verifies, so nothing is lost.
func checksums(o *awss3.Options) {
	o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
}

// noRetry makes an operation a single attempt. Conditional writes use it:
// if an attempt lands and its answer is lost (a 5xx from a proxy, a reset
// connection), the SDK's retry would be refused with 412 and report a
// write that succeeded as a lost race. One attempt reports ErrAmbiguous
// instead, and the caller re-reads to find out.
func noRetry(o *awss3.Options) {
	o.Retryer = aws.NopRetryer{}
	// Zero keeps the SDK from wrapping the retryer in one with the
	// client's attempt count again.
	o.RetryMaxAttempts = 0
}

func (b *Bucket) key(ctx context.Context, key string) (string, error) {
	k, err := bucket.JoinKey(b.prefix, key)
	if err != nil {
		return "", err
	}
	return k, ctx.Err()
}

// rel turns a full object name into a key relative to the prefix.
func (b *Bucket) rel(full string) (string, error) {
	if !strings.HasPrefix(full, b.prefix) {
		return "", fmt.Errorf("s3: list: key %q outside prefix %q", full, b.prefix)
	}
	return full[len(b.prefix):], nil
}

// version turns an ETag into a Version. Stores quote ETags; one that
// arrives bare is quoted so that every operation reports the same text.
func version(etag *string) bucket.Version {
	e := aws.ToString(etag)
	if e != "" && !strings.HasPrefix(e, `"`) && !strings.HasPrefix(e, "W/") {
		e = `"` + e + `"`
	}
	return bucket.Version(e)
}

// checksum is "md5:HEX" for an ETag that is a plain MD5, else "".
func checksum(v bucket.Version) string {
	e := strings.Trim(string(v), `"`)
	if len(e) != 2*md5.Size {
		return ""
	}
	if _, err := hex.DecodeString(e); err != nil {
		return ""
	}
	return "md5:" + strings.ToLower(e)
}

func attrs(key string, size *int64, etag *string, mod *time.Time) bucket.Attrs {
	v := version(etag)
	return bucket.Attrs{
		Key:      key,
		Size:     aws.ToInt64(size),
		Version:  v,
		ModTime:  aws.ToTime(mod),
		Checksum: checksum(v),
	}
}

// Get implements bucket.Bucket.
func (b *Bucket) Get(ctx context.Context, key string) ([]byte, bucket.Attrs, error) {
	k, err := b.key(ctx, key)
	if err != nil {
		return nil, bucket.Attrs{}, err
	}
	out, err := b.client.GetObject(ctx, &awss3.GetObjectInput{Bucket: &b.bucket, Key: &k}, checksums)
	if err != nil {
		return nil, bucket.Attrs{}, classify(ctx, "get", key, opRead, err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, bucket.Attrs{}, classify(ctx, "get", key, opRead, err)
	}
	if body == nil {
		body = []byte{}
	}
	if n := aws.ToInt64(out.ContentLength); out.ContentLength != nil && n != int64(len(body)) {
		return nil, bucket.Attrs{}, fmt.Errorf("s3: get %q: %w: read %d bytes of %d", key, bucket.ErrIntegrity, len(body), n)
	}
	size := int64(len(body))
	return body, attrs(key, &size, out.ETag, out.LastModified), nil
}

// Stat implements bucket.Bucket.
func (b *Bucket) Stat(ctx context.Context, key string) (bucket.Attrs, error) {
	k, err := b.key(ctx, key)
	if err != nil {
		return bucket.Attrs{}, err
	}
	out, err := b.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &b.bucket, Key: &k}, checksums)
	if err != nil {
		return bucket.Attrs{}, classify(ctx, "stat", key, opRead, err)
	}
	return attrs(key, out.ContentLength, out.ETag, out.LastModified), nil
}

// Put implements bucket.Bucket.
func (b *Bucket) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	k, err := b.key(ctx, key)
	if err != nil {
		return bucket.Attrs{}, err
	}
	sum := md5.Sum(body)
	size := int64(len(body))
	in := &awss3.PutObjectInput{
		Bucket:        &b.bucket,
		Key:           &k,
		Body:          bytes.NewReader(body),
		ContentLength: &size,
		ContentMD5:    aws.String(base64.StdEncoding.EncodeToString(sum[:])),
	}
	optFns := []func(*awss3.Options){checksums}
	op := opWrite
	switch v, ok := cond.Version(); {
	case cond.IsAbsent():
		in.IfNoneMatch = aws.String("*")
		optFns, op = append(optFns, noRetry), opCreate
	case ok:
		if v == "" {
			// No object has an empty ETag; and an empty If-Match would be
			// left out of the request, making the write unconditional.
			return bucket.Attrs{}, fmt.Errorf("s3: put %q: %w: empty version", key, bucket.ErrPrecondition)
		}
		in.IfMatch = aws.String(string(v))
		optFns, op = append(optFns, noRetry), opReplace
	}
	out, err := b.client.PutObject(ctx, in, optFns...)
	if err != nil {
		return bucket.Attrs{}, classify(ctx, "put", key, op, err)
	}
	v := version(out.ETag)
	if v == "" {
		return bucket.Attrs{}, fmt.Errorf("s3: put %q: %w: the store returned no ETag", key, bucket.ErrAmbiguous)
	}
	mod, _ := awsmiddleware.GetServerTime(out.ResultMetadata)
	return bucket.Attrs{Key: key, Size: size, Version: v, ModTime: mod, Checksum: checksum(v)}, nil
}

// Delete implements bucket.Bucket.
func (b *Bucket) Delete(ctx context.Context, key string, cond bucket.Condition) error {
	k, err := b.key(ctx, key)
	if err != nil {
		return err
	}
	if cond.IsAbsent() {
		return fmt.Errorf("s3: delete %q if-absent: %w", key, bucket.ErrUnsupported)
	}
	in := &awss3.DeleteObjectInput{Bucket: &b.bucket, Key: &k}
	optFns := []func(*awss3.Options){checksums}
	op := opDelete
	if v, ok := cond.Version(); ok {
		if b.noCondDelete {
			return fmt.Errorf("s3: delete %q %s: %w: the store is declared without conditional deletes (conditional_delete=false)", key, cond, bucket.ErrUnsupported)
		}
		if v == "" {
			return fmt.Errorf("s3: delete %q: %w: empty version", key, bucket.ErrPrecondition)
		}
		in.IfMatch = aws.String(string(v))
		optFns, op = append(optFns, noRetry), opReplace
	}
	if _, err := b.client.DeleteObject(ctx, in, optFns...); err != nil {
		return classify(ctx, "delete", key, op, err)
	}
	return nil
}

// List implements bucket.Bucket.
func (b *Bucket) List(ctx context.Context, opts bucket.ListOptions) (bucket.ListPage, error) {
	if err := ctx.Err(); err != nil {
		return bucket.ListPage{}, err
	}
	in := &awss3.ListObjectsV2Input{
		Bucket:  &b.bucket,
		Prefix:  aws.String(b.prefix + opts.Prefix),
		MaxKeys: aws.Int32(int32(bucket.PageSize(opts.PageSize))),
	}
	if opts.Delimiter != "" {
		in.Delimiter = aws.String(opts.Delimiter)
	}
	if opts.StartAfter != "" {
		in.StartAfter = aws.String(b.prefix + opts.StartAfter)
	}
	if opts.PageToken != "" {
		in.ContinuationToken = aws.String(opts.PageToken)
	}
	out, err := b.client.ListObjectsV2(ctx, in, checksums)
	if err != nil {
		return bucket.ListPage{}, classify(ctx, "list", opts.Prefix, opRead, err)
	}
	var page bucket.ListPage
	for _, o := range out.Contents {
		key, err := b.rel(aws.ToString(o.Key))
		if err != nil {
			return bucket.ListPage{}, err
		}
		page.Objects = append(page.Objects, attrs(key, o.Size, o.ETag, o.LastModified))
	}
	for _, p := range out.CommonPrefixes {
		rel, err := b.rel(aws.ToString(p.Prefix))
		if err != nil {
			return bucket.ListPage{}, err
		}
		page.Prefixes = append(page.Prefixes, rel)
	}
	if aws.ToBool(out.IsTruncated) {
		page.NextPageToken = aws.ToString(out.NextContinuationToken)
		if page.NextPageToken == "" {
			return bucket.ListPage{}, fmt.Errorf("s3: list %q: the store reported more keys but no continuation token", opts.Prefix)
		}
	}
	return page, nil
}

// Capabilities implements bucket.Bucket.
func (b *Bucket) Capabilities() bucket.Capabilities {
	return bucket.Capabilities{ConditionalDelete: !b.noCondDelete, KnownGaps: b.gaps}
}

// Close implements bucket.Bucket. The client holds no resources the
// Bucket must release.
func (b *Bucket) Close() error { return nil }
