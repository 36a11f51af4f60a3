package as2

import (
	"context"
	"strconv"
	"strings"
	"time"

	"wharf/internal/module"
	"wharf/internal/protocol/as2/receiver"
	"wharf/internal/protocol/as2/sender"
)

// The message page shows a message's AS2 facts after its verdict, in labelled groups
// (identity, security, receipt, transport) and without the records' internal ids; REST
// keeps the records whole (MessagePanel). Times are RFC 3339 text, which the page shows
// in its display zone.

// Titles of the fact groups.
const (
	groupIdentity  = "Identity"
	groupSecurity  = "Security"
	groupReceipt   = "Receipt"
	groupTransport = "Transport"
)

// MessageFactGroups reads the message's AS2 records as the page's groups.
func (rt *Runtime) MessageFactGroups(ctx context.Context, messageID int64) ([]module.PanelCard, bool, error) {
	p, ok, err := rt.MessagePanel(ctx, messageID)
	if err != nil || !ok {
		return nil, false, err
	}
	panel := p.(Panel)
	switch {
	case panel.Refusal != nil:
		return refusalGroups(*panel.Refusal), true, nil
	case panel.Inbound != nil:
		return inboundGroups(*panel.Inbound), true, nil
	}
	return outboundGroups(panel.Outbound), true, nil
}

// facts gathers one group's lines, leaving out the empty ones.
type facts []module.PanelDetail

func (f *facts) add(label, value string) {
	if value != "" {
		*f = append(*f, module.PanelDetail{Label: label, Value: value})
	}
}

func (f *facts) at(label string, t time.Time) {
	if !t.IsZero() {
		f.add(label, t.UTC().Format(time.RFC3339))
	}
}

// groups titles the four groups' lines, leaving out those without any.
func groups(id, sec, rcpt, tr facts) []module.PanelCard {
	var out []module.PanelCard
	for _, g := range []module.PanelCard{{Title: groupIdentity, Details: id}, {Title: groupSecurity, Details: sec},
		{Title: groupReceipt, Details: rcpt}, {Title: groupTransport, Details: tr}} {
		if len(g.Details) > 0 {
			out = append(out, g)
		}
	}
	return out
}

func outboundGroups(records []sender.OutboundRecord) []module.PanelCard {
	r := records[len(records)-1]
	var id, sec, rcpt, tr facts
	id.add("AS2 Message-ID", r.AS2MessageID)
	id.add("From", r.AS2From+" ("+r.Organization+")")
	id.add("To", r.AS2To+" ("+r.Partner+")")
	id.add("Partner software", r.PartnerSoftware)
	sec.add("Signed", algorithmOrNo(string(r.SigningAlgorithm)))
	enc := algorithmOrNo(string(r.EncryptionAlgorithm))
	if enc != "no" && r.KeyTransport != "" {
		enc += ", key transport " + string(r.KeyTransport)
	}
	sec.add("Encrypted", enc)
	sec.add("Compressed", yesNo(r.Compressed))
	asked := "none"
	if string(r.MDNMode) != "none" {
		asked = string(r.MDNMode)
		if r.SignedMDN {
			asked += ", signed, MIC with " + string(r.MICAlgorithm)
		}
	}
	rcpt.add("Asked for", asked)
	if m := r.MDN; m != nil {
		rcpt.add("Verdict", string(m.Verdict))
		rcpt.add("Disposition", m.Disposition)
		signed := "no"
		if m.Signed {
			signed = "yes, by " + orNone(m.Signer)
			if m.SignatureDigest != "" {
				signed += " (" + m.SignatureDigest + ")"
			}
		}
		rcpt.add("Signed", signed)
		rcpt.add("MIC matched", yesNo(m.MICMatched))
		rcpt.add("MIC", m.MIC)
		rcpt.add("Note", m.Note)
		rcpt.add("Came", string(m.Transport))
		rcpt.at("Received", m.ReceivedAt)
		rcpt.add("Receipt's Message-ID", m.MessageID)
		rcpt.add("Reporting software", m.ReportingUA)
	}
	tr.add("Outcome", strings.ReplaceAll(string(r.Outcome), "_", " "))
	tr.add("Reason", r.Reason)
	if r.HTTPStatus != 0 {
		tr.add("HTTP status", strconv.Itoa(r.HTTPStatus))
	}
	tr.add("Attempts", strconv.Itoa(r.Attempts))
	tr.at("First sent", r.FirstSentAt)
	tr.at("Last sent", r.LastSentAt)
	if r.AckDeadline != nil {
		tr.at("Receipt awaited until", *r.AckDeadline)
	}
	if n := len(records) - 1; n > 0 {
		var earlier []string
		for _, e := range records[:n] {
			earlier = append(earlier, e.AS2MessageID)
		}
		tr.add("Sent before as", strings.Join(earlier, ", "))
	}
	return groups(id, sec, rcpt, tr)
}

func inboundGroups(in receiver.InboundRecord) []module.PanelCard {
	var id, sec, rcpt, tr facts
	id.add("AS2 Message-ID", in.AS2MessageID)
	id.add("From", in.AS2From)
	id.add("To", in.AS2To)
	id.add("AS2 version", in.AS2Version)
	id.add("Partner software", in.PartnerSoftware)
	name := in.FileName
	if !in.FileNameSent {
		name += " (named by us)"
	}
	id.add("File name", name)
	sec.add("Layers", orNone(strings.Join(in.Layers, ", ")))
	if in.Signed {
		sec.add("Signature", strings.TrimSpace(in.SignatureAlgorithm+" "+in.SignatureScheme))
	}
	if in.Encrypted {
		sec.add("Encryption", strings.TrimSpace(in.Cipher+", key transport "+in.KeyTransport))
	}
	sec.add("Read leniently", strings.Join(in.Tolerances, "; "))
	rcpt.add("Asked for", in.MDNMode)
	if in.MDNMode != "none" {
		rcpt.add("Signed", yesNo(in.MDNSigned))
		rcpt.add("Status", in.MDNStatus)
		rcpt.add("Disposition", in.Disposition)
		rcpt.add("MIC", strings.TrimSpace(in.MIC+" "+in.MICAlgorithm))
		rcpt.add("MIC algorithm chosen", in.MICRule)
		rcpt.add("Receipt's Message-ID", in.MDNMessageID)
		rcpt.add("Sent to", in.MDNURL)
	}
	tr.at("Received", in.ReceivedAt)
	tr.add("Receiver", in.Instance)
	tr.add("AS2 features", in.EDIINTFeatures)
	tr.add("Same document as before", in.DuplicateContent)
	tr.add("Sent again as", strings.Join(in.RepeatsNotDelivered, ", "))
	return groups(id, sec, rcpt, tr)
}

func refusalGroups(r receiver.RefusalRecord) []module.PanelCard {
	var id, rcpt, tr facts
	id.add("AS2 Message-ID", r.AS2MessageID)
	id.add("From", r.AS2From)
	id.add("To", r.AS2To)
	rcpt.add("Asked for", r.MDNMode)
	rcpt.add("Disposition", r.Disposition)
	rcpt.add("Receipt's Message-ID", r.MDNMessageID)
	tr.add("Refused because", r.Reason)
	tr.add("Receiver", r.Instance)
	tr.add("Times refused", strconv.FormatInt(r.Count, 10))
	tr.at("First refused", r.FirstAt)
	tr.at("Last refused", r.LastAt)
	if r.BodySize >= 0 {
		kept := strconv.FormatInt(r.BodySize, 10) + " bytes, " + strconv.FormatInt(r.BodyKept, 10) + " kept"
		if r.BodyWithheld != "" {
			kept += " (" + r.BodyWithheld + ")"
		}
		tr.add("Body", kept)
	}
	return groups(id, nil, rcpt, tr)
}

// algorithmOrNo is an algorithm, or "no" for none.
func algorithmOrNo(a string) string {
	if a == "" || a == "none" {
		return "no"
	}
	return a
}
