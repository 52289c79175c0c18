// Package replica is cluster mode's log shipping: the leader streams data.db
// to a replica with Litestream, and followers keep a copy of it up to date
// from there, ready to be promoted. Litestream runs as a library inside
// petstore's binary (github.com/benbjohnson/litestream v0.5), so a node needs
// no litestream process beside it.
//
// Every term (an election's revision) has a path of its own under the
// replica root, <root>/<cluster>/terms/<term>/, and only its leader writes
// there: a new term starts from a full snapshot of the database in a new
// path, so two leaders never write to one replica, and what a deposed leader
// ships late lands in its own term, which no one follows any more.
//
// The leader (StartReplicating) copies each commit from the WAL every
// MonitorInterval and uploads each copy at once: a commit is in the replica
// within about MonitorInterval. Sync ships everything committed so far at
// once (a handover, or a create acknowledged only once shipped).
// Status says what was shipped, when, and why shipping fails when the
// replica's storage is unreachable; the leader goes on serving meanwhile.
//
// A follower (StartFollowing) restores the term's replica into its data
// directory and applies what the term ships every FollowInterval
// (Litestream's follow mode). Lag reads how far behind it is, from memory.
// Promote applies everything the term shipped and stops: the database is
// then complete, closed and ready for PocketBase to open. A data directory
// holding a database that is not a follower's copy (a former leader's, with
// writes it may never have shipped) is set aside first (SetAside).
//
// Litestream and PocketBase share data.db in one process. SQLite's POSIX
// locks belong to the process, so Litestream keeps its file descriptor open
// for as long as it replicates: close a Replicator only once PocketBase's
// connections to the database are closed (at the end of the process). Both
// use modernc's SQLite, which Litestream requires. A follower's copy is the
// other way round: Litestream writes its pages directly, taking and
// releasing POSIX locks on it, so nothing else in the process may open it
// (PocketBase opens it only after Promote), and commands in other processes
// refuse to write there (Following). On the leader Litestream does every
// checkpoint of data.db: between its checkpoints it holds a read
// transaction, so that no one restarts the WAL before it has copied it, and
// that transaction keeps any other connection from copying a page, so the
// leader runs no Checkpointer of petstore's (database.Checkpointer).
package replica

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/benbjohnson/litestream"
	"github.com/benbjohnson/litestream/file"
	"github.com/benbjohnson/litestream/s3"
)

// Litestream's intervals. The leader's Litestream copies new commits from
// the WAL every MonitorInterval, and the leader uploads each copy as soon
// as it is made: a lost leader takes with it the writes of about that
// interval. FollowInterval is how often a follower looks for new
// transactions, which costs listings of the replica (S3 LISTs).
const (
	MonitorInterval = 500 * time.Millisecond
	FollowInterval  = 1 * time.Second
)

// CheckpointPages is the size of the leader's WAL, in pages, from which
// Litestream checkpoints it at each copy (a PASSIVE checkpoint, which also
// restarts the WAL). Litestream's default, 1,000 pages (4 MB), is less than
// one copy's worth under load: it checkpointed at every copy, each time
// copying the frames committed meanwhile twice more (before and after it
// takes the write lock, which the writer then waits for) into files of
// their own. At 10,000 pages (40 MB) it checkpoints every few copies, and
// each checkpoint writes a page back once however often it changed
// meanwhile. Below that size, Litestream checkpoints a minute after the
// last checkpoint.
const CheckpointPages = 10_000

// LitestreamTables are the statements of the tables Litestream adds to a
// database it replicates, for its own bookkeeping (v0.5's db.go): a
// backup of a cluster's data, or of a single server's under `litestream
// replicate`, holds them.
var LitestreamTables = []string{
	"CREATE TABLE _litestream_seq (id INTEGER PRIMARY KEY, seq INTEGER)",
	"CREATE TABLE _litestream_lock (id INTEGER)",
}

// MetaDirName is the directory in the data directory where the leader's
// Litestream keeps its copies of the WAL until they are shipped. It belongs
// to one term: a new term starts it again. PocketBase's backups need not
// carry it.
const MetaDirName = ".litestream"

// Root is where replicas go: a directory (file:///path) or an S3 bucket and
// prefix (s3://bucket/prefix, with Litestream's query parameters such as
// endpoint, region and forcePathStyle). Credentials come from the
// environment as for the litestream binary (LITESTREAM_ACCESS_KEY_ID and
// LITESTREAM_SECRET_ACCESS_KEY, or AWS_*; not AWS_CA_BUNDLE, which
// Litestream's S3 client cannot take).
type Root struct {
	u *url.URL
}

// ParseURL parses a replica root. Its errors say what is wrong without
// naming a flag: the caller knows which one it read.
func ParseURL(s string) (Root, error) {
	if s == "" {
		return Root{}, errors.New("no replica URL: give file:///path or s3://bucket/prefix")
	}
	u, err := url.Parse(s)
	if err != nil {
		return Root{}, fmt.Errorf("%q is not a URL: give file:///path or s3://bucket/prefix", s)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return Root{}, fmt.Errorf("%q names a host: a file replica is a local directory, file:///path (three slashes)", s)
		}
		if u.Path == "" || !path.IsAbs(u.Path) || path.Clean(u.Path) == "/" {
			return Root{}, fmt.Errorf("%q has no directory: give file:///path", s)
		}
		if u.RawQuery != "" || u.Fragment != "" {
			return Root{}, fmt.Errorf("%q has a query or fragment, which a file replica does not take", s)
		}
		return Root{u: &url.URL{Scheme: "file", Path: path.Clean(u.Path)}}, nil
	case "s3":
		if u.Host == "" {
			return Root{}, fmt.Errorf("%q has no bucket: give s3://bucket/prefix", s)
		}
		if u.User != nil {
			return Root{}, fmt.Errorf("%q holds credentials: give them in LITESTREAM_ACCESS_KEY_ID and LITESTREAM_SECRET_ACCESS_KEY", s)
		}
		if os.Getenv("AWS_CA_BUNDLE") != "" {
			// The AWS SDK cannot add the bundle to the HTTP client that
			// Litestream gives it, and every request would fail.
			return Root{}, errors.New("AWS_CA_BUNDLE is set, which Litestream's S3 client cannot use: unset it, and add a private CA to the system's trust store or SSL_CERT_FILE")
		}
		r := Root{u: &url.URL{Scheme: "s3", Host: u.Host, Path: path.Clean("/" + u.Path), RawQuery: u.RawQuery}}
		if _, err := r.client("check", 1); err != nil {
			return Root{}, fmt.Errorf("%q: %w", s, err)
		}
		return r, nil
	case "":
		return Root{}, fmt.Errorf("%q has no scheme: give file:///path or s3://bucket/prefix", s)
	}
	return Root{}, fmt.Errorf("%q: replicas go to file:// or s3:// URLs, not %s://", s, u.Scheme)
}

// String returns the root's URL.
func (r Root) String() string {
	if r.u == nil {
		return ""
	}
	return r.u.String()
}

// TermURL returns where term's leader ships: <root>/<cluster>/terms/<term>.
func (r Root) TermURL(cluster string, term int64) string {
	u := r.termURL(cluster, term)
	return u.String()
}

func (r Root) termURL(cluster string, term int64) url.URL {
	u := *r.u
	u.Path = path.Join(u.Path, cluster, "terms", strconv.FormatInt(term, 10))
	return u
}

// client returns a Litestream replica client for term's path.
func (r Root) client(cluster string, term int64) (litestream.ReplicaClient, error) {
	if r.u == nil {
		return nil, errors.New("no replica root")
	}
	u := r.termURL(cluster, term)
	switch u.Scheme {
	case "file":
		return file.NewReplicaClient(u.Path), nil
	case "s3":
		return s3.NewReplicaClientFromURL(u.Scheme, u.Host, strings.TrimPrefix(u.Path, "/"), u.Query(), nil)
	}
	return nil, fmt.Errorf("replicas go to file:// or s3:// URLs, not %s://", u.Scheme)
}

var clusterName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// checkTerm checks what names a term's path: a cluster name that is one
// path segment, and a positive term.
func checkTerm(root Root, cluster string, term int64) error {
	if root.u == nil {
		return errors.New("no replica root")
	}
	if !clusterName.MatchString(cluster) {
		return fmt.Errorf("cluster name %q: letters, digits, '.', '_' and '-', starting with a letter or digit", cluster)
	}
	if term <= 0 {
		return fmt.Errorf("term %d: terms are positive", term)
	}
	return nil
}
