package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMissingBucketIsNotCreated: a bucket URL must name a bucket that
// exists; only the default ./cairn-data is created on first use.
func TestMissingBucketIsNotCreated(t *testing.T) {
	t.Chdir(t.TempDir())
	missing := filepath.Join(t.TempDir(), "missing")
	for _, args := range [][]string{
		{"workbench", "--bucket", "file://" + missing, "workbench_list"},
		{"import", t.TempDir(), "--workbench", "w", "--bucket", "file://" + missing},
		{"conformance", "file://" + missing},
	} {
		code, _, errOut := runWith(t, `{"id":"w"}`, args...)
		if code != exitStore || !strings.Contains(errOut, "bucket does not exist") {
			t.Errorf("%v: exit %d, stderr %q; want %d and the bucket named missing", args[0], code, errOut, exitStore)
		}
		if _, err := os.Stat(missing); !os.IsNotExist(err) {
			t.Fatalf("%v created the bucket: %v", args[0], err)
		}
	}
	if _, err := os.Stat(defaultDataDir); !os.IsNotExist(err) {
		t.Fatalf("an explicit bucket created ./%s: %v", defaultDataDir, err)
	}
}

// TestBucketURLsStayWhereTheyPoint: the file system root is never a
// bucket, and a file:// URL cannot lead out of the directory it names.
func TestBucketURLsStayWhereTheyPoint(t *testing.T) {
	parent := t.TempDir()
	named := filepath.Join(parent, "named")
	if err := os.Mkdir(named, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{"file:///", "file://" + named + "/..%2F", "file://" + named + "/%2e%2e"} {
		code, out, errOut := runWith(t, `{"id":"w"}`, "workbench", "--bucket", url, "workbench_create")
		if code != exitUsage || out != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want %d", url, code, out, errOut, exitUsage)
		}
	}
	if ents, err := os.ReadDir(parent); err != nil || len(ents) != 1 {
		t.Fatalf("the named directory's parent was written: %v, %v", ents, err)
	}
}

// TestUnusableStoresExitAlike: whatever the adapter, a store that cannot be
// reached, or refuses to be used without credentials, is exit 3 before any
// tool runs.
func TestUnusableStoresExitAlike(t *testing.T) {
	// No credentials anywhere the S3 SDK looks, and no metadata service.
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "",
	} {
		t.Setenv(k, v)
	}
	for name, url := range map[string]string{
		"gcs unreachable":   "gs://b?endpoint=http://127.0.0.1:1",
		"s3 no credentials": "s3://b?endpoint=http://127.0.0.1:1&region=us-east-1",
		"s3 unreachable":    "s3://b?endpoint=http://127.0.0.1:1&region=us-east-1",
		"file missing":      "file://" + filepath.Join(t.TempDir(), "missing"),
	} {
		t.Run(name, func(t *testing.T) {
			if name == "s3 unreachable" {
				t.Setenv("AWS_ACCESS_KEY_ID", "cairntestkey")
				t.Setenv("AWS_SECRET_ACCESS_KEY", "cairntestsecret")
			}
			code, out, errOut := runWith(t, `{"id":"w"}`, "workbench", "--bucket", url, "workbench_list")
			if code != exitStore || out != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d", code, out, errOut, exitStore)
			}
		})
	}
}
