package api

import (
	"encoding/json"
	"math/big"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"petstore/internal/pets"
	"petstore/internal/strictinput"
)

// Fuzz targets for every parser of client input. They call the parsers
// directly, for speed; FuzzHTTPCreateAndList (api_test) drives the same
// input through the real server. Seeds: f.Add below and testdata/fuzz/NAME/.
// `go test ./internal/api/` runs the seeds; .ci/run fuzzes each target for a while.

// checkInvalidRequest asserts a parser's refusal: a 400 invalid_request
// Error with a message.
func checkInvalidRequest(t *testing.T, err *Error) {
	t.Helper()
	if err.Status != http.StatusBadRequest || err.Code != CodeInvalidRequest || err.Message == "" {
		t.Fatalf("refusal %+v, want a 400 invalid_request Error with a message", err)
	}
	if !utf8.ValidString(err.Message) {
		t.Fatalf("message %q is not valid UTF-8", err.Message)
	}
}

func FuzzDecodeNewPet(f *testing.F) {
	for _, seed := range []string{
		`{"name":"Rex","categoryId":1}`,
		`{"name":"  Tom ","categoryId":9007199254740991,"status":"sold"}`,
		`{"status":"pending","categoryId":7,"name":"Ann"}`,
		`{"name":"Rex","categoryId":1,"name":"Max"}`,
		`{"name":"Rex","categoryId":1e3}`,
		`{"name":"Rex","categoryId":-0}`,
		`{"name":"Rex","categoryId":1.0}`,
		`{"name":"Rex","categoryId":1e2}`,
		`{"name":"Rex","categoryId":0.7e1}`,
		`{"name":"Rex","categoryId":700E-2}`,
		`{"name":"Rex","categoryId":1.5}`,
		`{"name":"Rex","categoryId":1.0000000000000001}`,
		`{"name":"Rex","categoryId":9.007199254740991e15}`,
		`{"name":"Rex","categoryId":9.007199254740992e15}`,
		`{"name":"Rex","categoryId":1e-400}`,
		`{"name":"Rex","categoryId":-0.0e1}`,
		`{"name":"Rex","categoryId":1e99999999999999999999}`,
		`{"name":"Rex","categoryId":1e9223372036854775807}`,
		`{"name":"Rex","categoryId":10e9223372036854775806}`,
		`{"name":"Rex","categoryId":1e-9223372036854775808}`,
		`{"name":"Rex","categoryId":-5e9223372036854775807}`,
		`{"name":"Rex","categoryId":9007199254740992}`,
		`{"name":"a\u0000b","categoryId":1}`,
		`{"name":"\u00e9\u0301","categoryId":1}`,
		`{"name":null,"categoryId":1}`,
		`{"id":1,"name":"Rex","categoryId":1}`,
		`[{"name":"Rex","categoryId":1}]`,
		`{"name":"Rex","categoryId":1} {}`,
		"\xef\xbb\xbf{\"name\":\"Rex\",\"categoryId\":1}",
		`{"name":"Rex","categoryId":"1"}`,
		`{"name":` + strings.Repeat("[", 20000),
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		np, err := decodeNewPet(body)
		if err != nil {
			checkInvalidRequest(t, err)
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		checkPetFields(t, np.Name, np.CategoryID, np.Status)
		// What was accepted is what the body says, read by a lenient decoder.
		var loose map[string]any
		if json.Unmarshal(body, &loose) != nil {
			t.Fatalf("accepted %q, which encoding/json cannot read as an object", body)
		}
		if name, _ := loose["name"].(string); strings.TrimSpace(name) != np.Name {
			t.Fatalf("name %q, body says %q", np.Name, name)
		}
		if status, _ := loose["status"].(string); status != np.Status {
			t.Fatalf("status %q, body says %q", np.Status, status)
		}
		// Every accepted categoryId is below 2^53, so a float64 holds it
		// exactly, and the lenient decoder's correctly rounded reading must
		// be that integer.
		if category, _ := loose["categoryId"].(float64); category != float64(np.CategoryID) {
			t.Fatalf("categoryId %d, body says %v", np.CategoryID, loose["categoryId"])
		}
	})
}

// FuzzIntegerValue checks categoryId's reading of JSON numbers against exact
// rational arithmetic (math/big), for numbers whose exponent big.Rat can
// afford.
func FuzzIntegerValue(f *testing.F) {
	for _, seed := range []string{
		"1", "1.0", "1e2", "1E+2", "0.7e1", "700e-2", "1.5", "15e-1", "0", "-0", "-0.0e1", "-1", "-1.0",
		"9007199254740991", "9007199254740992", "9.007199254740991e15", "90071992547409910e-1",
		"1.0000000000000001", "1e-400", "1e400", "0.0000001e7", "00", "1.", ".5", "1e", "+1", "\"1\"", "true", "",
		"1e9223372036854775807", "10e9223372036854775806", "1e-9223372036854775808", "0.5e9223372036854775807",
		"1e2147483647", "1e2147483648", "-1e9223372036854775807", "100e-9223372036854775808", "1e99999999999999999999",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, num string) {
		n, integer, inRange := strictinput.Integer([]byte(num), pets.MaxCategoryID)
		if !json.Valid([]byte(num)) || num != strings.TrimSpace(num) {
			return // the decoder hands integerValue valid JSON values without surrounding space
		}
		if num[0] != '-' && (num[0] < '0' || num[0] > '9') {
			if integer || inRange {
				t.Fatalf("strictinput.Integer(%q) = %d, %v, %v; want not an integer", num, n, integer, inRange)
			}
			return
		}
		if i := strings.IndexAny(num, "eE"); i >= 0 {
			if e, err := strconv.Atoi(num[i+1:]); err != nil || e > 1000 || e < -1000 {
				return // beyond what big.Rat computes quickly
			}
		}
		exact, ok := new(big.Rat).SetString(num)
		if !ok {
			t.Fatalf("big.Rat cannot read %q", num)
		}
		if integer != exact.IsInt() {
			t.Fatalf("strictinput.Integer(%q): integer %v, exactly %v", num, integer, exact.RatString())
		}
		want := integer && exact.Sign() > 0 && exact.Num().IsInt64() && exact.Num().Int64() <= pets.MaxCategoryID
		if inRange != want || (inRange && n != exact.Num().Int64()) {
			t.Fatalf("strictinput.Integer(%q) = %d, %v, %v; exactly %v", num, n, integer, inRange, exact.RatString())
		}
	})
}

// checkPetFields asserts what every accepted, and so every stored, pet
// satisfies. An empty status means omitted.
func checkPetFields(t testing.TB, name string, categoryID int64, status string) {
	t.Helper()
	if !utf8.ValidString(name) || name != strings.TrimSpace(name) {
		t.Fatalf("accepted name %q is not trimmed valid UTF-8", name)
	}
	if n := utf8.RuneCountInString(name); n < 1 || n > pets.MaxNameLen {
		t.Fatalf("accepted name %q of %d runes", name, n)
	}
	if strings.ContainsFunc(name, unicode.IsControl) || strings.ContainsFunc(name, func(r rune) bool { return unicode.Is(unicode.Bidi_Control, r) }) {
		t.Fatalf("accepted name %q with a control or text-direction character", name)
	}
	if categoryID < 1 || categoryID > pets.MaxCategoryID {
		t.Fatalf("accepted categoryId %d outside 1..2^53-1", categoryID)
	}
	if status != "" && !slices.Contains(pets.Statuses, status) {
		t.Fatalf("accepted status %q", status)
	}
}

func FuzzParseListQuery(f *testing.F) {
	for _, seed := range []string{
		"", "limit=1", "limit=100", "limit=101", "limit=0", "limit=010", "limit=+5", "limit=%35",
		"status=sold", "status=SOLD", "status=sold&status=sold", "limit=5&limit=5",
		"cursor=" + encodeCursor("123456789012345"), "cursor=MTox", "cursor=",
		"limit=5;status=sold", "status=%zz", "statu=sold", "=", "&&", "limit=1&status=pending&cursor=" + encodeCursor("999999999999999"),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		lq, err := parseListQuery(raw)
		q, parseErr := url.ParseQuery(raw)
		if err != nil {
			checkInvalidRequest(t, err)
			return
		}
		if parseErr != nil {
			t.Fatalf("accepted %q, which url.ParseQuery refuses: %v", raw, parseErr)
		}
		for name, values := range q {
			if len(values) != 1 || !slices.Contains([]string{"limit", "status", "cursor"}, name) {
				t.Fatalf("accepted %q with parameter %q given %d times", raw, name, len(values))
			}
		}
		if lq.Limit < 1 || lq.Limit > maxLimit {
			t.Fatalf("limit %d from %q", lq.Limit, raw)
		}
		if v, ok := q["limit"]; ok && v[0] != strconv.Itoa(lq.Limit) {
			t.Fatalf("limit %d from %q: not its plain decimal spelling", lq.Limit, v[0])
		} else if !ok && lq.Limit != defaultLimit {
			t.Fatalf("limit %d without a limit parameter", lq.Limit)
		}
		if lq.Status != q.Get("status") || (lq.Status != "" && !slices.Contains(pets.Statuses, lq.Status)) {
			t.Fatalf("status %q from %q", lq.Status, raw)
		}
		if lq.After != "" && !petIDPattern.MatchString(lq.After) {
			t.Fatalf("cursor id %q from %q", lq.After, raw)
		}
	})
}

func FuzzDecodeCursor(f *testing.F) {
	for _, seed := range []string{
		encodeCursor("100000000000000"), encodeCursor("999999999999999"), encodeCursor("012345678901234"),
		"MToxMjM0NTY3ODkwMTIzNDU", "MToxMjM0NTY3ODkwMTIzNDU=", "MToxMjM0NTY3ODkwMTIzNDV", "", "====", "Mj",
	} {
		f.Add(seed, uint64(0))
	}
	f.Fuzz(func(t *testing.T, s string, n uint64) {
		// Every id the service assigns round-trips.
		id := strconv.FormatUint(100000000000000+n%900000000000000, 10)
		if got, ok := decodeCursor(encodeCursor(id)); !ok || got != id {
			t.Fatalf("decodeCursor(encodeCursor(%q)) = %q, %v", id, got, ok)
		}
		// Any string decodes to an id or to nothing, and a decoded id
		// round-trips too.
		got, ok := decodeCursor(s)
		if !ok {
			if got != "" {
				t.Fatalf("refused %q but returned %q", s, got)
			}
			return
		}
		if !petIDPattern.MatchString(got) {
			t.Fatalf("decodeCursor(%q) = %q, not a pet id", s, got)
		}
		if again, ok := decodeCursor(encodeCursor(got)); !ok || again != got {
			t.Fatalf("id %q from %q does not round-trip", got, s)
		}
	})
}

var (
	positiveDecimal = regexp.MustCompile(`^[1-9][0-9]*$`)
	decimal         = regexp.MustCompile(`^-?[1-9][0-9]*$`)
)

func FuzzParsePetID(f *testing.F) {
	for _, seed := range []string{
		"1", "123456789012345", "9007199254740991", "9007199254740992", "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809", "0", "-0", "01", "-1", "+1",
		" 1", "1 ", "1e3", "0x10", "١", "99999999999999999999999", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// parsePositiveDecimal accepts exactly ^[1-9][0-9]*$ within int64.
		n, err := strictinput.PositiveDecimal(s)
		fits := len(s) < 19 || (len(s) == 19 && s <= "9223372036854775807")
		if want := positiveDecimal.MatchString(s) && fits; (err == nil) != want {
			t.Fatalf("strictinput.PositiveDecimal(%q) = %d, %v; want accepted: %v", s, n, err, want)
		}
		if err == nil && strconv.FormatInt(n, 10) != s {
			t.Fatalf("strictinput.PositiveDecimal(%q) = %d", s, n)
		}

		// parsePetID accepts every int64 in plain decimal, and says that
		// those from 1 to pets.MaxID may name a pet.
		d, derr := strictinput.Decimal(s)
		_, rangeErr := strconv.ParseInt(s, 10, 64)
		if want := (s == "0" || decimal.MatchString(s)) && rangeErr == nil; (derr == nil) != want || (derr == nil && strconv.FormatInt(d, 10) != s) {
			t.Fatalf("strictinput.Decimal(%q) = %d, %v; want accepted: %v", s, d, derr, want)
		}
		id, assignable, perr := parsePetID(s)
		if perr != nil {
			checkInvalidRequest(t, perr)
			if derr == nil {
				t.Fatalf("parsePetID refused %q, an int64", s)
			}
			return
		}
		if derr != nil || id != s || assignable != (err == nil && n <= pets.MaxID) {
			t.Fatalf("parsePetID(%q) = %q, %v; Decimal: %v", s, id, assignable, derr)
		}
	})
}
