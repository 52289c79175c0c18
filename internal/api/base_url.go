package api

import (
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/pocketbase/pocketbase/core"
)

// BaseURL is where clients reach /v1. With a public URL (serve
// --public-url), Link and Location headers are absolute under it and the
// served documents name it; without one, Link and Location start at the
// host's root (/v1/...) and each served document names the address its
// request reached.
type BaseURL struct {
	public string
}

// root is the base URL of /v1 relative to the host.
const root = "/v1"

// ParseBaseURL checks a public URL: an absolute http or https URL whose path
// ends in the version segment /v1, with no query, fragment or user
// information. Its path may hold only letters, digits, -._~/ and %-escapes,
// so that it needs no quoting in a header, a document or a shell. An empty
// publicURL is no public URL.
func ParseBaseURL(publicURL string) (BaseURL, error) {
	if publicURL == "" {
		return BaseURL{}, nil
	}
	u, err := url.Parse(publicURL)
	switch {
	case err != nil:
		return BaseURL{}, errors.New("it is not a URL")
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.Opaque != "":
		return BaseURL{}, errors.New("it must be an absolute http or https URL")
	case u.User != nil:
		return BaseURL{}, errors.New("it must not hold a user name or password")
	case strings.ContainsAny(publicURL, "?#"):
		return BaseURL{}, errors.New("it must have no query or fragment")
	case !validHost(u.Host):
		return BaseURL{}, errors.New("its host must be a DNS name or an IP address, with an optional port")
	}
	// The path as written (a valid host is as written too): one with
	// characters that Go's parser would escape is not plain.
	path := publicURL[len(u.Scheme+"://"+u.Host):]
	if !plainPath(path) {
		return BaseURL{}, errors.New(`its path may hold only letters, digits, "-", ".", "_", "~", "/" and %-escapes`)
	}
	if !strings.HasSuffix(path, root) {
		return BaseURL{}, errors.New("its path must end in /v1, the version segment")
	}
	// Segments are judged as browsers resolve them: %2e is a dot, and %2f
	// would be a "/" to a proxy that decodes it.
	for _, segment := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		if strings.Contains(strings.ToLower(segment), "%2f") {
			return BaseURL{}, errors.New(`its path must have no escaped "/" (%2F)`)
		}
		decoded, err := url.PathUnescape(segment)
		if err != nil || decoded == "" || decoded == "." || decoded == ".." {
			return BaseURL{}, errors.New(`its path must have no empty, "." or ".." segment, escaped or not`)
		}
	}
	return BaseURL{public: u.Scheme + "://" + strings.ToLower(u.Host) + path}, nil
}

// Public is the public URL, or "" when there is none.
func (b BaseURL) Public() string { return b.public }

// links is the base of Link and Location headers: the public URL, or /v1.
func (b BaseURL) links() string {
	if b.public == "" {
		return root
	}
	return b.public
}

// of is the base URL to name in the document served to e: the public URL,
// or the scheme and host e reached plus /v1. X-Forwarded-Proto and
// X-Forwarded-Host count only when PocketBase trusts proxy headers (its
// settings' trusted proxy headers name at least one), read as it reads the
// client IP: the last header, its rightmost value, or its leftmost with
// UseLeftmostIP. forwarded says whether they were read. A host that is not a
// DNS name or an IP address gives the relative /v1.
func (b BaseURL) of(e *core.RequestEvent) (base string, forwarded bool) {
	if b.public != "" {
		return b.public, false
	}
	scheme, host := "http", e.Request.Host
	if e.Request.TLS != nil {
		scheme = "https"
	}
	if proxy := e.App.Settings().TrustedProxy; len(proxy.Headers) > 0 {
		forwarded = true
		switch p := strings.ToLower(forwardedValue(e.Request, "X-Forwarded-Proto", proxy.UseLeftmostIP)); p {
		case "http", "https":
			scheme = p
		}
		if h := forwardedValue(e.Request, "X-Forwarded-Host", proxy.UseLeftmostIP); h != "" {
			host = h
		}
	}
	if !validHost(host) {
		return root, forwarded
	}
	return scheme + "://" + strings.ToLower(host) + root, forwarded
}

// forwardedValue is the value of a proxy header that r carries: in the last
// such header, the rightmost of its comma-separated values, or the leftmost.
func forwardedValue(r *http.Request, name string, leftmost bool) string {
	values := r.Header.Values(name)
	if len(values) == 0 {
		return ""
	}
	list := strings.Split(values[len(values)-1], ",")
	if leftmost {
		return strings.TrimSpace(list[0])
	}
	return strings.TrimSpace(list[len(list)-1])
}

// validHost reports whether hostport is a DNS name (letters, digits, "-",
// "_" and dots), an IPv4 address or a bracketed IPv6 address without a zone,
// with an optional port.
func validHost(hostport string) bool {
	host := hostport
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 && !strings.HasSuffix(hostport, "]") {
		host = hostport[:i]
		if n, err := strconv.Atoi(hostport[i+1:]); err != nil || n < 1 || n > 65535 || !allBytes(hostport[i+1:], isDigit) {
			return false
		}
	}
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		addr, err := netip.ParseAddr(host[1 : len(host)-1])
		return err == nil && addr.Is6() && addr.Zone() == ""
	}
	if host == "" || len(host) > 253 || host[0] == '.' || host[0] == '-' || strings.Contains(host, "..") {
		return false
	}
	return allBytes(host, func(c byte) bool { return isAlphanumeric(c) || c == '-' || c == '_' || c == '.' })
}

// plainPath reports whether path holds only letters, digits, -._~/ and
// well-formed %-escapes.
func plainPath(path string) bool {
	for i := 0; i < len(path); i++ {
		c := path[i]
		switch {
		case isAlphanumeric(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/':
		case c == '%' && i+2 < len(path) && isHex(path[i+1]) && isHex(path[i+2]):
			i += 2
		default:
			return false
		}
	}
	return true
}

func allBytes(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool        { return '0' <= c && c <= '9' }
func isAlphanumeric(c byte) bool { return isDigit(c) || 'a' <= c|0x20 && c|0x20 <= 'z' }
func isHex(c byte) bool          { return isDigit(c) || 'a' <= c|0x20 && c|0x20 <= 'f' }
