package as2

import (
	"context"
	"fmt"
	"strings"
	"time"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/receiver"
	"wharf/internal/protocol/as2/sender"
)

var _ module.MessageFacter = (*Runtime)(nil)

// MessageFacts reads the message's AS2 records for the verdict on its page.
func (rt *Runtime) MessageFacts(ctx context.Context, messageID int64) (module.MessageFacts, bool, error) {
	p, ok, err := rt.MessagePanel(ctx, messageID)
	if err != nil || !ok {
		return module.MessageFacts{}, false, err
	}
	panel := p.(Panel)
	switch {
	case panel.Refusal != nil:
		return refusalFacts(*panel.Refusal), true, nil
	case panel.Inbound != nil:
		return inboundFacts(*panel.Inbound), true, nil
	}
	last := panel.Outbound[len(panel.Outbound)-1]
	cert, err := rt.certificateFor(ctx, last)
	if err != nil {
		return module.MessageFacts{}, false, err
	}
	return outboundFacts(last, cert), true, nil
}

// refusalFacts: we refused what the partner sent.
func refusalFacts(r receiver.RefusalRecord) module.MessageFacts {
	f := module.MessageFacts{RefusedByUs: true, Problem: r.Reason}
	if c, ok := classOfDisposition(r.Disposition); ok {
		withAdvice(&f, c, inbound, "", r.Reason)
	}
	return f
}

// inboundFacts: what we answered a message we took.
func inboundFacts(in receiver.InboundRecord) module.MessageFacts {
	f := module.MessageFacts{}
	switch {
	case in.MDNMode == "none":
		f.Receipt = "no receipt asked"
	case in.MDNSigned:
		f.Receipt = "we answered a signed receipt (" + in.MDNMode + ")"
	default:
		f.Receipt = "we answered an unsigned receipt (" + in.MDNMode + ")"
	}
	return f
}

// outboundFacts reads the newest AS2 message sent for the message; cert names the
// certificate a failure concerns (ours that signed, theirs we encrypted to).
func outboundFacts(r sender.OutboundRecord, cert map[failureClass]string) module.MessageFacts {
	f := module.MessageFacts{}
	if r.Outcome == sender.OutcomeAwaiting && r.AckDeadline != nil {
		f.AwaitingUntil = *r.AckDeadline
	}
	if m := r.MDN; m != nil {
		switch {
		case m.Verdict == sender.VerdictAccepted && m.Signed && m.MICMatched:
			f.Receipt = "signed receipt verified, MIC matched"
		case m.Verdict == sender.VerdictAccepted && m.MICMatched:
			f.Receipt = "unsigned receipt, MIC matched"
		case m.Verdict == sender.VerdictAccepted:
			f.Receipt = "receipt accepted (" + strings.TrimSpace(m.Note) + ")"
		}
		if m.Verdict == sender.VerdictRefused {
			c, negative := classOfDisposition(m.Disposition)
			if !negative {
				c = failMIC
			}
			// A negative disposition speaks for itself; a MIC that does not match is told
			// by the sender's reason.
			f.RefusedByPartner = negative
			reason := r.Reason
			if negative {
				reason = ""
			}
			withAdvice(&f, c, outbound, cert[c], reason)
		}
		return f
	}
	switch {
	case r.Outcome != sender.OutcomeFailed && r.Outcome != sender.OutcomeRetry:
	case strings.Contains(r.Reason, "deadline") || strings.Contains(r.Reason, "no receipt"):
		withAdvice(&f, failNoReceipt, outbound, "", r.Reason)
	case r.HTTPStatus >= 400:
		withAdvice(&f, failHTTP, outbound, "", r.Reason)
	case r.HTTPStatus == 0:
		withAdvice(&f, failUnreachable, outbound, "", r.Reason)
	default:
		f.Problem = r.Reason
	}
	return f
}

// withAdvice fills the problem and fix of class c on side s, the reason kept as the
// detail in brackets.
func withAdvice(f *module.MessageFacts, c failureClass, s side, cert, reason string) {
	a, ok := adviceFor(c, s, cert)
	if !ok {
		f.Problem = reason
		return
	}
	f.Problem, f.Fix = a.problem, a.fix
	if reason != "" {
		f.Problem += " (" + reason + ")"
	}
}

// certificateFor names the certificates a failure of r may concern: ours that signed it
// (the partner could not verify it) and the partner's we encrypt to.
func (rt *Runtime) certificateFor(ctx context.Context, r sender.OutboundRecord) (map[failureClass]string, error) {
	out := map[failureClass]string{}
	rem, err := rt.profiles.GetRemote(ctx, persistence.PartyName(r.Partner))
	if isNotFound(err) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("certificates of message to %s: %w", r.Partner, err)
	}
	var signer int64
	if rem.OurSigningCertificateID != nil {
		signer = *rem.OurSigningCertificateID
	} else if loc, err := rt.profiles.GetLocal(ctx, persistence.PartyName(r.Organization)); err == nil {
		signer = loc.SigningCertificateID
	} else if !isNotFound(err) {
		return nil, fmt.Errorf("certificates of message to %s: %w", r.Partner, err)
	}
	if out[failAuthentication], err = rt.certificateName(ctx, signer); err != nil {
		return nil, err
	}
	var theirs []string
	for _, id := range rem.PartnerCertificateIDs {
		name, err := rt.certificateName(ctx, id)
		if err != nil {
			return nil, err
		}
		theirs = append(theirs, name)
	}
	out[failDecryption] = strings.Join(theirs, " or ")
	return out, nil
}

// certificateName is a certificate's subject and expiry; empty for none. The expiry is
// RFC 3339, which the message page shows in its display zone (module.MessageFacts).
func (rt *Runtime) certificateName(ctx context.Context, id int64) (string, error) {
	if id == 0 {
		return "", nil
	}
	c, err := rt.core.Store.GetCertificate(ctx, id)
	if isNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("certificate %d: %w", id, err)
	}
	return c.Subject + ", expiring " + c.NotAfter.UTC().Format(time.RFC3339), nil
}
