package replica

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"petstore/internal/database"
)

// TestS3Replica: the same shipping, following and promotion through an S3
// API (gofakes3, an S3 server in memory on loopback), with the root's
// query parameters as MinIO takes them; the term's objects are under the
// root's prefix.
func TestS3Replica(t *testing.T) {
	backend := s3mem.New()
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	defer srv.Close()
	if err := backend.CreateBucket("pets"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LITESTREAM_ACCESS_KEY_ID", "test")
	t.Setenv("LITESTREAM_SECRET_ACCESS_KEY", "test")
	// Set on the machines that run these tests, and refused (ParseURL).
	t.Setenv("AWS_CA_BUNDLE", "/etc/ssl/certs/ca-certificates.crt")
	if _, err := ParseURL("s3://pets/backups"); err == nil || !strings.Contains(err.Error(), "AWS_CA_BUNDLE") {
		t.Errorf("ParseURL with AWS_CA_BUNDLE set: %v, want a refusal naming it", err)
	}
	t.Setenv("AWS_CA_BUNDLE", "")
	root, err := ParseURL("s3://pets/backups/petstore?endpoint=" + srv.URL + "&region=us-east-1&forcePathStyle=true")
	if err != nil {
		t.Fatal(err)
	}

	leader := openStore(t, t.TempDir())
	r := startReplicating(t, leader, root, 3)
	leader.write(t, 30)
	if err := r.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	followerDir := t.TempDir()
	f := startFollowing(t, root, 3, followerDir)
	waitFor(t, 5*time.Second, "the follower has caught up", func() bool {
		l := f.Lag()
		return l.Err == nil && l.Applied > 0 && l.Applied == r.Status().Shipped
	})
	last := leader.write(t, 20)
	if err := r.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := f.Promote(t.Context()); err != nil {
		t.Fatal(err)
	}
	followerDB := filepath.Join(followerDir, database.DataFile)
	if got, want := rows(t, followerDB), rows(t, leader.path); len(got) != 50 || !hasPet(followerDB, last) || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("promoted copy holds %d pets, want the leader's 50", len(got))
	}

	objects, err := backend.ListBucket("pets", &gofakes3.Prefix{}, gofakes3.ListBucketPage{})
	if err != nil {
		t.Fatal(err)
	}
	if len(objects.Contents) == 0 {
		t.Fatal("the bucket is empty")
	}
	for _, o := range objects.Contents {
		if !strings.HasPrefix(o.Key, "backups/petstore/petstore/terms/3/") {
			t.Errorf("object %s is outside the term's path", o.Key)
		}
	}
}
