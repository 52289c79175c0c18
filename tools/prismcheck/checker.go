package main

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strings"

	"petstore/testkit/contract"
)

// An exchange is one request and the status it must get.
type exchange struct {
	op     string // what it exercises: an operationId, or how it is outside the document
	method string
	path   string // under /v1, with its query
	key    string // the bearer token; "" sends none
	header []string
	body   []byte // sent as application/json unless header names another type
	want   int
}

// checker sends exchanges and keeps what went wrong.
type checker struct {
	prism    string // Prism's URL, standing for the binary's /v1
	direct   string // the binary's /v1
	http     *http.Client
	contract *contract.Contract
	// statuses counts the answers by operation, through Prism or direct.
	statuses map[string]map[int]int
	viaPrism int
	outside  int
	failures []string
}

func newChecker(prismURL, direct string) (*checker, error) {
	c, err := contract.Default()
	if err != nil {
		return nil, err
	}
	return &checker{
		prism: prismURL, direct: direct, contract: c,
		http:     &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		statuses: map[string]map[int]int{},
	}, nil
}

func (c *checker) total() int { return c.viaPrism + c.outside }

func (c *checker) failf(x exchange, format string, args ...any) {
	what := fmt.Sprintf("%s %s %s", x.op, x.method, x.path)
	if x.body != nil {
		what += fmt.Sprintf(" %.60q", x.body)
	}
	c.failures = append(c.failures, what+": "+fmt.Sprintf(format, args...))
}

// send makes the exchange through Prism and fails it on a violation Prism
// reports or an unexpected status. It returns the answer (nil when none
// came), its body read.
func (c *checker) send(x exchange) (*http.Response, []byte) {
	c.viaPrism++
	resp, body := c.do(c.prism, x)
	if resp == nil {
		return nil, nil
	}
	if v := resp.Header.Get("sl-violations"); v != "" {
		c.failf(x, "Prism reports %s", v)
	} else if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/problem+json" {
		c.failf(x, "Prism answered %d itself: %s", resp.StatusCode, bytes.TrimSpace(body))
	} else if resp.StatusCode != x.want {
		c.failf(x, "got %d, want %d: %.300s", resp.StatusCode, x.want, body)
	}
	return resp, body
}

// sendDirect makes an exchange Prism does not pass on (see the package
// documentation) to the binary itself, and checks it as the tests do.
func (c *checker) sendDirect(x exchange) (*http.Response, []byte) {
	c.outside++
	x.op += " (direct)"
	resp, body := c.do(c.direct, x)
	if resp == nil {
		return nil, nil
	}
	if err := c.contract.Check(resp.Request, resp, body); err != nil {
		c.failf(x, "%v", err)
	} else if resp.StatusCode != x.want {
		c.failf(x, "got %d, want %d: %.300s", resp.StatusCode, x.want, body)
	}
	return resp, body
}

func (c *checker) do(base string, x exchange) (*http.Response, []byte) {
	ctx, cancel := exchangeContext()
	defer cancel()
	var rd io.Reader
	if x.body != nil {
		rd = bytes.NewReader(x.body)
	}
	req, err := http.NewRequestWithContext(ctx, x.method, base+x.path, rd)
	if err != nil {
		c.failf(x, "%v", err)
		return nil, nil
	}
	if x.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if x.key != "" {
		req.Header.Set("Authorization", "Bearer "+x.key)
	}
	for i := 0; i+1 < len(x.header); i += 2 {
		req.Header.Set(x.header[i], x.header[i+1])
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.failf(x, "%v", err)
		return nil, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		c.failf(x, "reading the answer: %v", err)
		return nil, nil
	}
	if c.statuses[x.op] == nil {
		c.statuses[x.op] = map[int]int{}
	}
	c.statuses[x.op][resp.StatusCode]++
	return resp, body
}

// report prints how many exchanges of each operation got each status.
func (c *checker) report(w io.Writer) {
	fmt.Fprintf(w, "%d exchanges: %d validated by Prism, %d that Prism does not pass on checked directly; %d failed\n",
		c.total(), c.viaPrism, c.outside, len(c.failures))
	for _, op := range slices.Sorted(maps.Keys(c.statuses)) {
		var parts []string
		for _, status := range slices.Sorted(maps.Keys(c.statuses[op])) {
			parts = append(parts, fmt.Sprintf("%d×%d", status, c.statuses[op][status]))
		}
		fmt.Fprintf(w, "  %-28s %s\n", op, strings.Join(parts, " "))
	}
}
