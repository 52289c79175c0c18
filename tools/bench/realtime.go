package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// realtimeTarget is createPet while a superuser subscribes to pets over
// PocketBase's realtime API, as a front end that shows new animals live
// does: each create is built into a record and broadcast. createPet runs
// without a subscriber.
const realtimeTarget = "createSub"

// measureRealtime runs t (createPet's request) with one realtime client
// subscribed to pets for the whole run, and fails unless the client hears a
// create message for every create wrk counted.
func measureRealtime(dir, baseURL, token string, t target, conns, threads int, d time.Duration) (result, error) {
	sub, err := subscribePets(baseURL, token)
	if err != nil {
		return result{}, err
	}
	defer sub.close()
	r, err := runWrk(dir, baseURL, t, conns, threads, d)
	if err != nil {
		return r, err
	}
	// Each message is sent before its 201; the stream may still carry some.
	for deadline := time.Now().Add(10 * time.Second); sub.creates.Load() < r.Requests; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return r, fmt.Errorf("the realtime subscriber heard %d creates of %d", sub.creates.Load(), r.Requests)
		}
	}
	return r, nil
}

// petsSubscriber is a realtime client subscribed to pets/*, counting the
// create messages it reads.
type petsSubscriber struct {
	creates atomic.Int64
	close   func()
}

// subscribePets connects to /api/realtime as the JS SDK does (GET, read
// PB_CONNECT's clientId, POST the subscriptions with the token).
func subscribePets(baseURL, token string) (*petsSubscriber, error) {
	st, err := openStream(baseURL)
	if err != nil {
		return nil, err
	}
	s := &petsSubscriber{close: st.close}
	status, err := st.subscribe(baseURL, token, []string{"pets/*"})
	if err == nil && status != http.StatusNoContent {
		err = fmt.Errorf("realtime subscribe: status %d", status)
	}
	if err != nil {
		s.close()
		return nil, err
	}
	go func() {
		for st.lines.Scan() {
			if strings.HasPrefix(st.lines.Text(), "data:") && strings.Contains(st.lines.Text(), `"action":"create"`) {
				s.creates.Add(1)
			}
		}
	}()
	return s, nil
}

// stream is an open realtime stream, read up to its PB_CONNECT.
type stream struct {
	clientID string
	lines    *bufio.Scanner // the rest of the stream
	close    func()
}

// errRefused is openStream's error when the server answers with a status
// other than the stream's.
var errRefused = errors.New("realtime stream refused")

// openStream connects to /api/realtime and reads PB_CONNECT's clientId.
func openStream(baseURL string) (*stream, error) {
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/api/realtime", nil)
	if err != nil {
		cancel()
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	st := &stream{lines: bufio.NewScanner(resp.Body), close: func() { cancel(); resp.Body.Close() }}
	if resp.StatusCode != http.StatusOK {
		st.close()
		return nil, fmt.Errorf("%w: status %d", errRefused, resp.StatusCode)
	}
	for st.clientID == "" && st.lines.Scan() {
		if data, ok := strings.CutPrefix(st.lines.Text(), "data:"); ok {
			var connect struct {
				ClientID string `json:"clientId"`
			}
			if err := json.Unmarshal([]byte(data), &connect); err != nil {
				st.close()
				return nil, fmt.Errorf("realtime PB_CONNECT %q: %w", data, err)
			}
			st.clientID = connect.ClientID
		}
	}
	if st.clientID == "" {
		st.close()
		return nil, fmt.Errorf("realtime: no PB_CONNECT: %v", st.lines.Err())
	}
	return st, nil
}

// subscribe sets the stream's subscriptions with token's credential (none
// when empty), and returns the answer's status.
func (st *stream) subscribe(baseURL, token string, topics []string) (int, error) {
	body, _ := json.Marshal(map[string]any{"clientId": st.clientID, "subscriptions": topics})
	req, _ := http.NewRequest(http.MethodPost, baseURL+"/api/realtime", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}
