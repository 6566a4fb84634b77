// grpc_call: one gRPC call of any method with grpc-go, without generated code. Messages go
// through as bytes: the codec registered under "proto" passes them on unchanged, so the caller
// (a test) encodes requests and decodes replies itself, and the content-type stays the plain
// application/grpc every grpc-go client sends.
//
// Usage: grpc_call -target HOST:PORT -method /pkg.Service/Method -kind unary|server|client|bidi
//
//	[-md key=value ...] [-timeout 300ms] [-gzip] [-content-subtype proto] HEX... | -
//
// Each HEX is one request message ("-": one per line on stdin). Prints one JSON document: the
// replies (hex), the headers and trailers (values of -bin keys in hex), the final status code,
// its message and details (decoded by grpc-go from grpc-status-details-bin; values in hex),
// and how the replies came (their grpc-encoding, each one's length on the wire).
// Exits 0 whenever the call ended with a status, whatever the status; 2 on bad usage.
package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
)

// bytesCodec passes messages through: requests arrive encoded, replies leave encoded.
type bytesCodec struct{}

func (bytesCodec) Marshal(v interface{}) ([]byte, error) {
	switch message := v.(type) {
	case []byte:
		return message, nil
	case *[]byte:
		return *message, nil
	}
	return nil, fmt.Errorf("bytesCodec: cannot marshal %T", v)
}

func (bytesCodec) Unmarshal(data []byte, v interface{}) error {
	target, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("bytesCodec: cannot unmarshal into %T", v)
	}
	*target = append([]byte(nil), data...)
	return nil
}

// "proto": it stands in for the protobuf codec, so calls carry application/grpc.
func (bytesCodec) Name() string { return "proto" }

func init() { encoding.RegisterCodec(bytesCodec{}) }

// wire notes how replies arrived: their grpc-encoding and each one's length on the wire.
type wire struct {
	encoding string
	lengths  []int
}

func (w *wire) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context   { return ctx }
func (w *wire) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (w *wire) HandleConn(context.Context, stats.ConnStats)                       {}
func (w *wire) HandleRPC(_ context.Context, event stats.RPCStats) {
	switch event := event.(type) {
	case *stats.InHeader:
		w.encoding = event.Compression
	case *stats.InPayload:
		w.lengths = append(w.lengths, event.WireLength-5) // less the message's prefix
	}
}

type pairs []string

func (p *pairs) String() string     { return strings.Join(*p, ",") }
func (p *pairs) Set(v string) error { *p = append(*p, v); return nil }

type detail struct {
	TypeURL string `json:"type_url"`
	Value   string `json:"value"`
}

type result struct {
	Replies  []string            `json:"replies"`
	Headers  map[string][]string `json:"headers"`
	Trailers map[string][]string `json:"trailers"`
	Code     int                 `json:"code"`
	CodeName string              `json:"code_name"`
	Message  string              `json:"message"`
	Details  []detail            `json:"details"`
	// The replies' grpc-encoding ("" for none) and their lengths as sent (compressed or not).
	ReplyEncoding    string `json:"reply_encoding"`
	ReplyWireLengths []int  `json:"reply_wire_lengths"`
}

func usage(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "grpc_call: "+format+"\n", args...)
	os.Exit(2)
}

func printable(md metadata.MD) map[string][]string {
	out := map[string][]string{}
	for key, values := range md {
		for _, value := range values {
			if strings.HasSuffix(key, "-bin") {
				value = hex.EncodeToString([]byte(value))
			}
			out[key] = append(out[key], value)
		}
	}
	return out
}

func requests(args []string) [][]byte {
	if len(args) == 1 && args[0] == "-" {
		args = nil
		lines := bufio.NewScanner(os.Stdin)
		lines.Buffer(make([]byte, 1<<20), 64<<20)
		for lines.Scan() { // an empty line is an empty message
			args = append(args, strings.TrimSpace(lines.Text()))
		}
		if err := lines.Err(); err != nil {
			usage("reading stdin: %v", err)
		}
	}
	out := make([][]byte, 0, len(args))
	for i, arg := range args {
		message, err := hex.DecodeString(arg)
		if err != nil {
			usage("request %d is not hex: %v", i+1, err)
		}
		out = append(out, message)
	}
	return out
}

func outgoing(md pairs) metadata.MD {
	out := metadata.MD{}
	for _, pair := range md {
		key, value, found := strings.Cut(pair, "=")
		if !found || key == "" {
			usage("-md %q: expected key=value", pair)
		}
		if strings.HasSuffix(strings.ToLower(key), "-bin") {
			raw, err := hex.DecodeString(value)
			if err != nil {
				usage("-md %s: a -bin value is given in hex: %v", key, err)
			}
			value = string(raw)
		}
		out.Append(key, value)
	}
	return out
}

// call sends every request and collects every reply; the error is the call's final status.
func call(ctx context.Context, conn *grpc.ClientConn, method, kind string, reqs [][]byte,
	opts []grpc.CallOption) ([][]byte, error) {
	if kind == "unary" {
		if len(reqs) != 1 {
			usage("a unary call takes one request, not %d", len(reqs))
		}
		var reply []byte
		if err := conn.Invoke(ctx, method, reqs[0], &reply, opts...); err != nil {
			return nil, err
		}
		return [][]byte{reply}, nil
	}
	desc := &grpc.StreamDesc{
		StreamName:    method,
		ServerStreams: kind == "server" || kind == "bidi",
		ClientStreams: kind == "client" || kind == "bidi",
	}
	if !desc.ClientStreams && len(reqs) != 1 {
		usage("a %s call takes one request, not %d", kind, len(reqs))
	}
	stream, err := conn.NewStream(ctx, desc, method, opts...)
	if err != nil {
		return nil, err
	}
	for _, req := range reqs {
		// io.EOF: the server has ended the call; RecvMsg below says how.
		if err := stream.SendMsg(req); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, err
		}
	}
	if err := stream.CloseSend(); err != nil {
		return nil, err
	}
	var replies [][]byte
	for {
		var reply []byte
		err := stream.RecvMsg(&reply)
		if errors.Is(err, io.EOF) {
			return replies, nil
		}
		if err != nil {
			return replies, err
		}
		replies = append(replies, reply)
		if !desc.ServerStreams { // one reply, and grpc-go has read the status with it
			return replies, nil
		}
	}
}

func main() {
	target := flag.String("target", "", "host:port of the server (cleartext HTTP/2)")
	method := flag.String("method", "", "/package.Service/Method")
	kind := flag.String("kind", "unary", "unary, server, client or bidi")
	timeout := flag.Duration("timeout", 0, "the call's deadline (sent as grpc-timeout); 0: none")
	compress := flag.Bool("gzip", false, "compress requests with gzip (grpc-encoding: gzip)")
	subtype := flag.String("content-subtype", "", "proto: send application/grpc+proto")
	var md pairs
	flag.Var(&md, "md", "request metadata key=value (repeatable; -bin values in hex)")
	flag.Parse()
	if *target == "" || !strings.HasPrefix(*method, "/") {
		usage("-target and -method /package.Service/Method are required")
	}
	switch *kind {
	case "unary", "server", "client", "bidi":
	default:
		usage("-kind %q: expected unary, server, client or bidi", *kind)
	}
	reqs := requests(flag.Args())

	seen := &wire{lengths: []int{}}
	conn, err := grpc.Dial(*target, grpc.WithInsecure(), grpc.WithStatsHandler(seen))
	if err != nil {
		usage("dial %s: %v", *target, err)
	}
	defer conn.Close()
	ctx := metadata.NewOutgoingContext(context.Background(), outgoing(md))
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	var headers, trailers metadata.MD
	opts := []grpc.CallOption{grpc.Header(&headers), grpc.Trailer(&trailers)}
	if *compress {
		opts = append(opts, grpc.UseCompressor(gzip.Name))
	}
	if *subtype != "" {
		opts = append(opts, grpc.CallContentSubtype(*subtype))
	}
	replies, err := call(ctx, conn, *method, *kind, reqs, opts)

	st := status.Convert(err)
	out := result{
		Replies:  []string{},
		Headers:  printable(headers),
		Trailers: printable(trailers),
		Code:     int(st.Code()),
		CodeName: st.Code().String(),
		Message:  st.Message(),
		Details:  []detail{},

		ReplyEncoding:    seen.encoding,
		ReplyWireLengths: seen.lengths,
	}
	for _, reply := range replies {
		out.Replies = append(out.Replies, hex.EncodeToString(reply))
	}
	for _, packed := range st.Proto().GetDetails() {
		out.Details = append(out.Details, detail{packed.GetTypeUrl(), hex.EncodeToString(packed.GetValue())})
	}
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetIndent("", "  ")
	if err := encoder.Encode(out); err != nil {
		usage("writing the result: %v", err)
	}
}
