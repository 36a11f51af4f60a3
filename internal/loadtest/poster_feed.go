package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"sync"
	"time"
)

// feeder sends documents through the API process's REST API (POST /api/v1/messages,
// straight to the target), from several clients at once as in-house systems would.
type feeder struct {
	api     *Instance
	target  string
	to      string
	payload []byte
	client  *http.Client

	mu   sync.Mutex
	sent map[int64]bool // the ids of the messages accepted
}

func newFeeder(api *Instance, target, to string, payload []byte, clients int) *feeder {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = clients
	return &feeder{api: api, target: target, to: to, payload: payload,
		client: &http.Client{Transport: tr, Timeout: time.Minute}, sent: map[int64]bool{}}
}

// feed sends n documents from clients senders and returns when all are accepted.
func (f *feeder) feed(ctx context.Context, n, clients int) error {
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < n; i += clients {
				if err := f.send(ctx, fmt.Sprintf("doc-%06d.edi", i)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// send posts one document and notes its message id.
func (f *feeder) send(ctx context.Context, name string) error {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, kv := range [][2]string{{"from", "local"}, {"to", f.to}, {"target", f.target}} {
		if err := mw.WriteField(kv[0], kv[1]); err != nil {
			return err
		}
	}
	fw, err := mw.CreateFormFile("file", name)
	if err != nil {
		return err
	}
	if _, err := fw.Write(f.payload); err != nil {
		return err
	}
	if err := mw.Close(); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, "POST", "http://"+f.api.Addr+"/api/v1/messages", &body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+f.api.Token)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("X-Requested-With", "wharf-loadtest")
	resp, err := f.client.Do(req)
	if err != nil {
		return fmt.Errorf("send %s: %w", name, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("send %s: %w", name, err)
	}
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("send %s: %s: %s", name, resp.Status, bytes.TrimSpace(data))
	}
	var m struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal(data, &m); err != nil || m.ID <= 0 {
		return fmt.Errorf("send %s: no message id in the answer: %v", name, err)
	}
	f.mu.Lock()
	f.sent[m.ID] = true
	f.mu.Unlock()
	return nil
}
