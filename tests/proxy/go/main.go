// The Echo API (tests/proxy/protos) on grpc-go with server reflection: a gRPC server Portico
// did not write, for the proxy tests. Usage: echo-server -port N. Prints "listening" once
// it accepts calls, and what happened: "sleeping", "cancelled Count", "cancelled Sleep".
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	protov1 "github.com/golang/protobuf/proto"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	protov2 "google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"

	pb "portico.test/echo/echopb"
)

type echo struct {
	pb.UnimplementedEchoServer
}

func reply(ctx context.Context, text string) *pb.SayReply {
	seen := map[string]string{}
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		for key, values := range md {
			if !strings.HasSuffix(key, "-bin") && len(values) > 0 {
				seen[key] = values[0]
			}
		}
	}
	return &pb.SayReply{Text: text, Metadata: seen, Server: "go"}
}

func (echo) Say(ctx context.Context, req *pb.SayRequest) (*pb.SayReply, error) {
	grpc.SetHeader(ctx, metadata.Pairs("x-echo", "said"))
	return reply(ctx, req.Text), nil
}

func (echo) Count(req *pb.CountRequest, stream pb.Echo_CountServer) error {
	for i := int32(0); i < req.Count; i++ {
		if err := stream.Send(reply(stream.Context(), fmt.Sprint(i))); err != nil {
			return err
		}
		select {
		case <-stream.Context().Done():
			fmt.Println("cancelled Count")
			return status.FromContextError(stream.Context().Err()).Err()
		case <-time.After(time.Duration(req.IntervalMs) * time.Millisecond):
		}
	}
	return nil
}

func (echo) Sum(stream pb.Echo_SumServer) error {
	total := &pb.Total{}
	for {
		number, err := stream.Recv()
		if err == io.EOF {
			return stream.SendAndClose(total)
		}
		if err != nil {
			return err
		}
		total.Sum += number.Value
		total.Count++
	}
}

func (echo) Chat(stream pb.Echo_ChatServer) error {
	for {
		req, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := stream.Send(reply(stream.Context(), strings.ToUpper(req.Text))); err != nil {
			return err
		}
	}
}

func (echo) Fail(ctx context.Context, req *pb.SayRequest) (*pb.SayReply, error) {
	st := status.New(codes.FailedPrecondition, "no echo today")
	st, err := st.WithDetails(&errdetails.BadRequest{
		FieldViolations: []*errdetails.BadRequest_FieldViolation{
			{Field: "text", Description: fmt.Sprintf("%q is not welcome", req.Text)},
		},
	})
	if err != nil {
		return nil, err
	}
	return nil, st.Err()
}

func (echo) Sleep(ctx context.Context, req *pb.SleepRequest) (*pb.SayReply, error) {
	fmt.Println("sleeping")
	select {
	case <-ctx.Done():
		if ctx.Err() == context.Canceled { // by the caller, not its deadline
			fmt.Println("cancelled Sleep")
		}
		return nil, status.FromContextError(ctx.Err()).Err()
	case <-time.After(time.Duration(req.Millis) * time.Millisecond):
		return reply(ctx, "awake"), nil
	}
}

// Debian's grpc-go marshals through github.com/golang/protobuf 1.3, which cannot handle the
// messages today's protoc-gen-go generates: those go through google.golang.org/protobuf, the
// older ones (grpc-go's own reflection messages) as before.
type codec struct{}

func (codec) Marshal(v interface{}) ([]byte, error) {
	if m, ok := v.(protov2.Message); ok {
		return protov2.Marshal(m)
	}
	return protov1.Marshal(v.(protov1.Message))
}

func (codec) Unmarshal(data []byte, v interface{}) error {
	if m, ok := v.(protov2.Message); ok {
		return protov2.Unmarshal(data, m)
	}
	return protov1.Unmarshal(data, v.(protov1.Message))
}

func (codec) Name() string { return "proto" }

// Debian's github.com/golang/protobuf (1.3) keeps its own registry of files, which grpc-go's
// reflection reads and code from today's protoc-gen-go does not fill: register them there too.
func registerV1(fd protoreflect.FileDescriptor) {
	if protov1.FileDescriptor(fd.Path()) != nil {
		return
	}
	imports := fd.Imports()
	for i := 0; i < imports.Len(); i++ {
		registerV1(imports.Get(i).FileDescriptor)
	}
	raw, err := protov2.Marshal(protodesc.ToFileDescriptorProto(fd))
	if err != nil {
		panic(err)
	}
	var zipped bytes.Buffer
	writer := gzip.NewWriter(&zipped)
	writer.Write(raw)
	writer.Close()
	protov1.RegisterFile(fd.Path(), zipped.Bytes())
}

func main() {
	encoding.RegisterCodec(codec{})
	registerV1(pb.File_portico_echo_v1_echo_proto)
	port := flag.Int("port", 0, "port on 127.0.0.1")
	flag.Parse()
	listener, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	server := grpc.NewServer()
	pb.RegisterEchoServer(server, echo{})
	reflection.Register(server)
	fmt.Println("listening")
	if err := server.Serve(listener); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
