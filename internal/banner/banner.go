package banner

import (
	"fmt"
	"io"
	"log"
	"strings"
)

// Print names the addresses under base, the server's, and the public
// URL of /v1 when there is one, in one write: a reader of the output (a log
// collector, a supervisor) never sees half of it. Every address it prints
// answers something other than 404 when opened: /v1 and /api/ themselves
// are no resources, so it names /v1/pets and /api/health.
func Print(w io.Writer, base, public string) {
	b := new(strings.Builder)
	log.New(b, "", log.LstdFlags).Print()
	text := strings.TrimSpace(b.String())
	b.Reset()
	fmt.Fprintf(b, "%s Server started at %s\n", text, base)
	fmt.Fprintf(b, "├─ API:         %s/v1/pets (send an API key: Authorization: Bearer KEY)\n", base)
	if public != "" {
		fmt.Fprintf(b, "├─ Public API:  %s/pets (Link, Location, the served documents)\n", public)
	}
	fmt.Fprintf(b, "├─ Reference:   %s/docs/\n", base)
	fmt.Fprintf(b, "├─ Staff page:  %s/staff/ (API keys, customers, categories, webhooks)\n", base)
	fmt.Fprintf(b, "├─ Dashboard:   %s/_/\n", base)
	fmt.Fprintf(b, "└─ PocketBase:  %s/api/health (PocketBase's own API, under /api/)\n", base)
	io.WriteString(w, b.String())
}

// BaseURL is the server's address as PocketBase's own banner derives it.
func BaseURL(host string, https bool) string {
	scheme := "http"
	if https {
		scheme = "https"
	}
	if host == "" || strings.HasSuffix(host, ":http") || strings.HasSuffix(host, ":https") {
		host = "127.0.0.1"
	}
	return scheme + "://" + host
}
