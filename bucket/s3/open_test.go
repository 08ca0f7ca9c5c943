package s3_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/s3"
)

// isolateAWSEnv points the SDK's default chain at the test's credentials
// and nothing else: no shared config, no profile, no instance metadata.
func isolateAWSEnv(t *testing.T, region string) {
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":           testAccessKey,
		"AWS_SECRET_ACCESS_KEY":       testSecretKey,
		"AWS_SESSION_TOKEN":           "",
		"AWS_REGION":                  region,
		"AWS_DEFAULT_REGION":          "",
		"AWS_PROFILE":                 "",
		"AWS_CONFIG_FILE":             none,
		"AWS_SHARED_CREDENTIALS_FILE": none,
		"AWS_ENDPOINT_URL":            "",
		"AWS_ENDPOINT_URL_S3":         "",
		"AWS_EC2_METADATA_DISABLED":   "true",
	} {
		t.Setenv(k, v)
	}
}

// TestOpen opens an s3:// URL against gofakes3 named by "localhost", which
// only path-style addressing reaches, with credentials from the
// environment and the default region, and checks that keys land under the
// URL's prefix.
func TestOpen(t *testing.T) {
	isolateAWSEnv(t, "")
	ctx := t.Context()
	srv := newGofakes3(t)
	endpoint := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	direct := newClient(srv.URL, nil, 0)
	name, err := createBucket(ctx, direct)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bucket.Open(ctx, "s3://"+name+"/some/prefix?endpoint="+endpoint+"&path_style=true")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, ok := b.(*s3.Bucket); !ok {
		t.Fatalf("opened a %T, want *s3.Bucket", b)
	}
	a, err := b.Put(ctx, "k", []byte("opened"), bucket.IfAbsent())
	if err != nil {
		t.Fatal(err)
	}
	if a.Key != "k" {
		t.Fatalf("put key %q, want k", a.Key)
	}
	full := "some/prefix/k"
	out, err := direct.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &name, Key: &full})
	if err != nil {
		t.Fatalf("the object is not at %s: %v", full, err)
	}
	if got := bucket.Version(*out.ETag); got != a.Version {
		t.Fatalf("stored ETag %s, put returned %s", got, a.Version)
	}
	objs, _, err := bucket.ListAll(ctx, b, bucket.ListOptions{})
	if err != nil || len(objs) != 1 || objs[0].Key != "k" {
		t.Fatalf("list = %+v, %v; want the one key k", objs, err)
	}

	// Without path_style the client addresses NAME.localhost, which does
	// not reach the bucket.
	vb, err := bucket.Open(ctx, "s3://"+name+"/some/prefix?endpoint="+endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer vb.Close()
	if _, _, err := vb.Get(ctx, "k"); err == nil {
		t.Fatal("virtual-host addressing of localhost reached the bucket; path_style has no effect to test")
	}
}

func TestOpenErrors(t *testing.T) {
	isolateAWSEnv(t, "")
	ctx := context.Background()
	for _, c := range []struct{ url, want string }{
		{"s3://bkt?nope=1", `unknown query parameter "nope"`},
		{"s3://bkt?path_style=yes", `path_style="yes"`},
		// No region anywhere and no endpoint to default one for.
		{"s3://bkt", "no region"},
	} {
		b, err := bucket.Open(ctx, c.url)
		if err == nil {
			b.Close()
			t.Fatalf("open %s: no error, want one mentioning %q", c.url, c.want)
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Fatalf("open %s: %v, want it to mention %q", c.url, err, c.want)
		}
	}
	// A region from the environment is enough without an endpoint.
	isolateAWSEnv(t, "eu-west-1")
	b, err := bucket.Open(ctx, "s3://bkt/p")
	if err != nil {
		t.Fatalf("open with AWS_REGION set: %v", err)
	}
	b.Close()
}

func TestNewErrors(t *testing.T) {
	client := newClient("http://127.0.0.1:1", nil, 1)
	for _, c := range []struct {
		client       *awss3.Client
		name, prefix string
	}{
		{nil, "b", ""},
		{client, "", ""},
		{client, "b", "noslash"},
		{client, "b", "/lead/"},
	} {
		if _, err := s3.New(c.client, c.name, c.prefix, s3.Options{}); err == nil {
			t.Fatalf("New(%v, %q, %q): no error", c.client != nil, c.name, c.prefix)
		}
	}
}

func TestCapabilities(t *testing.T) {
	gaps := map[string]string{"conditional-delete": "why"}
	b, err := s3.New(newClient("http://127.0.0.1:1", nil, 1), "b", "p/", s3.Options{KnownGaps: gaps})
	if err != nil {
		t.Fatal(err)
	}
	gaps["conditional-delete"] = "changed by the caller"
	c := b.Capabilities()
	if !c.ConditionalDelete || len(c.KnownGaps) != 1 || c.KnownGaps["conditional-delete"] != "why" {
		t.Fatalf("capabilities %+v, want conditional delete and the gaps given to New", c)
	}
	plain, err := s3.New(newClient("http://127.0.0.1:1", nil, 1), "b", "", s3.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c := plain.Capabilities(); !c.ConditionalDelete || c.KnownGaps != nil {
		t.Fatalf("capabilities %+v, want conditional delete and no gaps", c)
	}
}
