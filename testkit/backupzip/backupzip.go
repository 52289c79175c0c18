// Package backupzip edits backups (PocketBase's zips of a data directory)
// as someone who can upload one could: statements run on its data.db, and
// entries added with whatever modes they name.
package backupzip

import (
	"archive/zip"
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pocketbase/pocketbase/core"
)

// Entry is an entry to add to a zip: a file, or a directory when its mode
// says so.
type Entry struct {
	Name    string
	Mode    fs.FileMode
	Content []byte
}

// Forge is backup with the statements run on its data.db and the entries
// extra added.
func Forge(t testing.TB, backup []byte, statements []string, extra ...Entry) []byte {
	t.Helper()
	return ForgeDatabases(t, backup, map[string][]string{"data.db": statements}, extra...)
}

// ForgeDatabases is backup with statements run on each database they name
// (data.db, auxiliary.db) and the entries extra added.
func ForgeDatabases(t testing.TB, backup []byte, statements map[string][]string, extra ...Entry) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(backup), int64(len(backup)))
	if err != nil {
		t.Fatal(err)
	}
	contents := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		content, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		contents[f.Name] = content
	}
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	for _, f := range zr.File {
		if strings.HasPrefix(f.Name, "data.db-") || strings.HasPrefix(f.Name, "auxiliary.db-") {
			continue // folded into its database below
		}
		content := contents[f.Name]
		if f.Name == "data.db" || f.Name == "auxiliary.db" {
			// A backup of a live directory holds each database's WAL
			// beside it, with what is not checkpointed yet.
			content = editDB(t, content, contents[f.Name+"-wal"], statements[f.Name])
		}
		w, err := zw.Create(f.Name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(content)
	}
	for _, e := range extra {
		h := &zip.FileHeader{Name: e.Name, Method: zip.Deflate}
		h.SetMode(e.Mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(e.Content)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// editDB is the SQLite database db, with its WAL wal (nil: none) folded
// in, with the statements run on it.
func editDB(t testing.TB, db, wal []byte, statements []string) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data.db")
	if err := os.WriteFile(path, db, 0o600); err != nil {
		t.Fatal(err)
	}
	if wal != nil {
		if err := os.WriteFile(path+"-wal", wal, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := core.DefaultDBConnect(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range statements {
		if _, err := conn.NewQuery(s).Execute(); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if _, err := conn.NewQuery("PRAGMA wal_checkpoint(TRUNCATE)").Execute(); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	edited, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return edited
}
