package records

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/settings"
)

// UploadOverhead is what a send-by-hand body may carry beyond the document: the other
// fields and the multipart framing.
const UploadOverhead = 64 << 10

// MaxUploadBytes is the setting max_upload_mib in bytes: the largest document sent by hand.
func MaxUploadBytes(ctx context.Context, st interface {
	GetSetting(ctx context.Context, key string) (string, error)
}) (int64, error) {
	stored := map[string]string{}
	v, err := st.GetSetting(ctx, settings.MaxUploadMiB)
	switch {
	case err == nil:
		stored[settings.MaxUploadMiB] = v
	case !errors.Is(err, persistence.ErrNotFound):
		return 0, fmt.Errorf("read setting %s: %w", settings.MaxUploadMiB, err)
	}
	vals, err := settings.Parse(stored)
	if err != nil {
		return 0, err
	}
	return vals.MaxUploadBytes(), nil
}

// SendInput is a message sent by hand. With Target the message goes to that target
// instance alone; with only Source it is routed as if that source instance had received
// it. One of the two is required. The message's source is Source, or ManualSource.
type SendInput struct {
	From          string
	To            string
	Source        string
	Target        string
	FileName      string
	Body          io.Reader
	CorrelationID string
	OriginEventID string
	// Metadata is a JSON object of string values (persistence.NormalizeMetadata); empty
	// for none.
	Metadata string
	Actor    string
}

// SendMessage validates a message sent by hand and hands it to the ingester, which stores
// and dispatches it. The body is read only once everything else is valid.
func SendMessage(ctx context.Context, st Store, ing module.Ingester, in SendInput) (persistence.Message, error) {
	item, err := checkSend(ctx, st, in)
	if err != nil {
		return persistence.Message{}, err
	}
	res, err := ing.Ingest(ctx, []module.Incoming{item})
	if err != nil {
		return persistence.Message{}, fmt.Errorf("send message by hand: %w", err)
	}
	if len(res) != 1 {
		return persistence.Message{}, fmt.Errorf("send message by hand: the ingester answered %d results for 1 item", len(res))
	}
	if err := res[0].Err; err != nil {
		var fe *persistence.FieldError
		switch {
		case errors.As(err, &fe):
			return persistence.Message{}, err
		case errors.Is(err, module.ErrUnknownParty):
			return persistence.Message{}, fieldError("to", err.Error())
		}
		return persistence.Message{}, fmt.Errorf("send message by hand: %w", err)
	}
	return res[0].Message, nil
}

// CheckSend checks a message sent by hand without sending it, so a form whose file is
// refused still learns what else is wrong.
func CheckSend(ctx context.Context, st Store, in SendInput) error {
	_, err := checkSend(ctx, st, in)
	return err
}

// checkSend validates a message sent by hand and returns what the ingester takes.
func checkSend(ctx context.Context, st Store, in SendInput) (module.Incoming, error) {
	var errs []error
	item := module.Incoming{Source: ManualSource, Body: in.Body, Actor: in.Actor, ByOperator: true}
	var err error
	if item.From, err = persistence.ParsePartyName(in.From); err != nil {
		errs = append(errs, fieldError("from", err.Error()))
	}
	if item.To, err = persistence.ParsePartyName(in.To); err != nil {
		errs = append(errs, fieldError("to", err.Error()))
	}
	if item.FileName, err = persistence.ParseFileName(in.FileName); err != nil {
		errs = append(errs, fieldError("file", err.Error()))
	}
	if item.CorrelationID, err = parseReference(in.CorrelationID); err != nil {
		errs = append(errs, fieldError("correlation_id", err.Error()))
	}
	if item.OriginEventID, err = parseReference(in.OriginEventID); err != nil {
		errs = append(errs, fieldError("origin_event_id", err.Error()))
	}
	if item.Metadata, err = parseMetadata(in.Metadata); err != nil {
		errs = append(errs, err)
	}
	var source, target persistence.InstanceName
	if in.Source != "" {
		if source, err = persistence.ParseInstanceName(in.Source); err != nil {
			errs = append(errs, fieldError("source", err.Error()))
		}
	}
	if in.Target != "" {
		if target, err = persistence.ParseInstanceName(in.Target); err != nil {
			errs = append(errs, fieldError("target", err.Error()))
		}
	}
	if in.Source == "" && in.Target == "" {
		errs = append(errs, fieldError("target", "name a target instance, or a source instance whose routes choose the targets"))
	}
	// The references that parsed are looked up too, so one refusal names every field.
	for _, c := range []struct {
		field string
		name  persistence.PartyName
	}{{"from", item.From}, {"to", item.To}} {
		if c.name == "" {
			continue
		}
		ok, err := partyExists(ctx, st, c.name)
		if err != nil {
			return module.Incoming{}, err
		}
		if !ok {
			errs = append(errs, fieldError(c.field, fmt.Sprintf("no organization or partner named %q", c.name)))
		}
	}
	for _, c := range []struct {
		field string
		name  persistence.InstanceName
		role  module.Role
	}{{"source", source, module.RoleSource}, {"target", target, module.RoleTarget}} {
		if c.name == "" {
			continue
		}
		err := checkInstanceRole(ctx, st, c.field, c.name, c.role)
		var fe *persistence.FieldError
		switch {
		case errors.As(err, &fe):
			errs = append(errs, fe)
		case err != nil:
			return module.Incoming{}, err
		}
	}
	if len(errs) > 0 {
		return module.Incoming{}, errors.Join(errs...)
	}
	if source != "" {
		item.Source = source
	}
	item.Target = target
	return item, nil
}

// parseMetadata reads a client's metadata: a JSON object of strings, bounded.
func parseMetadata(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fieldError("metadata", "must be a JSON object of string values: "+err.Error())
	}
	return persistence.NormalizeMetadata(m)
}

// parseReference checks a client-given correlation or origin event id; empty is allowed
// (the ingester generates one).
func parseReference(s string) (string, error) {
	if err := persistence.CheckReference(s); err != nil {
		return "", err
	}
	return s, nil
}
