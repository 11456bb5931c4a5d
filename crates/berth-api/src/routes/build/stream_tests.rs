#![allow(clippy::unwrap_used)]

use super::*;

/// A step as the builder starts it (one stage: no stage label).
fn start(number: usize, total: usize, instruction: &str) -> StepStart {
    StepStart {
        id: StepId(number),
        number,
        total,
        stage: None,
        stage_number: number,
        stage_total: total,
        instruction: instruction.to_owned(),
    }
}

fn digest(fill: char) -> Digest {
    Digest::from_hex(&fill.to_string().repeat(64)).unwrap()
}

/// The chunked body's JSON messages (the head checked and dropped).
fn messages(bytes: &[u8]) -> Vec<Value> {
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let (head, mut body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(
        head.contains("\r\nContent-Type: application/json\r\n"),
        "{head}"
    );
    assert!(head.ends_with("\r\nTransfer-Encoding: chunked"), "{head}");
    let mut out = Vec::new();
    loop {
        let (size, rest) = body.split_once("\r\n").unwrap();
        let size = usize::from_str_radix(size, 16).unwrap();
        if size == 0 {
            assert_eq!(rest, "\r\n");
            return out;
        }
        let chunk = &rest[..size];
        // One message a chunk, each ending in "\r\n" as moby's.
        let line = chunk.strip_suffix("\r\n").unwrap();
        out.push(serde_json::from_str(line).unwrap());
        body = &rest[size + 2..];
    }
}

fn streams(messages: &[Value]) -> String {
    messages
        .iter()
        .filter_map(|message| message["stream"].as_str())
        .collect()
}

/// `FROM busybox` / `RUN echo hi > /f` / `CMD ["cat","/f"]`, as the
/// builder would report it.
fn report(progress: &mut dyn Progress) {
    progress.step(&start(1, 3, "FROM busybox"));
    progress.step_end(StepId(0), &StepEnd::Done(digest('a')));
    progress.step(&start(2, 3, "RUN echo hi > /f"));
    progress.running_in(StepId(0), &"3f4a".repeat(16));
    progress.output(StepId(0), OutputStream::Stdout, b"hi\n");
    progress.step_end(StepId(0), &StepEnd::Done(digest('b')));
    progress.step(&start(3, 3, "CMD [\"cat\",\"/f\"]"));
    progress.step_end(StepId(0), &StepEnd::Cached(digest('c')));
}

#[test]
fn a_build_streams_as_the_classic_builder() {
    let mut out = Vec::new();
    let mut stream = BuildStream::new(&mut out, false, true);
    report(&mut stream);
    stream.warning("One or more build-args [UNUSED] were not consumed");
    let outcome = BuildOutcome {
        image: digest('c'),
        tags: vec!["x:latest".to_owned(), "y:1".to_owned()],
    };
    assert!(matches!(
        stream.succeed(&outcome),
        Outcome::Streamed { keep_alive: true }
    ));
    let messages = messages(&out);
    assert_eq!(messages[0], json!({ "stream": "Step 1/3 : FROM busybox" }));
    assert_eq!(messages[1], json!({ "stream": "\n" }));
    assert_eq!(
        streams(&messages),
        [
            "Step 1/3 : FROM busybox\n",
            " ---> aaaaaaaaaaaa\n",
            "Step 2/3 : RUN echo hi > /f\n",
            " ---> Running in 3f4a3f4a3f4a\n",
            "hi\n",
            "Removing intermediate container 3f4a3f4a3f4a\n",
            " ---> bbbbbbbbbbbb\n",
            "Step 3/3 : CMD [\"cat\",\"/f\"]\n",
            " ---> Using cache\n",
            " ---> cccccccccccc\n",
            "[Warning] One or more build-args [UNUSED] were not consumed\n",
            "Successfully built cccccccccccc\n",
            "Successfully tagged x:latest\n",
            "Successfully tagged y:1\n",
        ]
        .concat()
    );
    let aux: Vec<&Value> = messages.iter().filter(|m| m.get("aux").is_some()).collect();
    assert_eq!(
        aux,
        [&json!({ "aux": { "ID": format!("sha256:{}", "c".repeat(64)) } })]
    );
    // The aux id comes right before "Successfully built".
    let position = messages
        .iter()
        .position(|m| m.get("aux").is_some())
        .unwrap();
    assert_eq!(
        messages[position + 1]["stream"],
        "Successfully built cccccccccccc\n"
    );
}

#[test]
fn old_clients_get_no_aux() {
    let mut out = Vec::new();
    let mut stream = BuildStream::new(&mut out, false, false);
    report(&mut stream);
    let outcome = BuildOutcome {
        image: digest('c'),
        tags: Vec::new(),
    };
    stream.succeed(&outcome);
    assert!(messages(&out).iter().all(|m| m.get("aux").is_none()));
}

#[test]
fn quiet_builds_answer_only_the_id() {
    let mut out = Vec::new();
    let mut stream = BuildStream::new(&mut out, true, true);
    report(&mut stream);
    let outcome = BuildOutcome {
        image: digest('c'),
        tags: vec!["x:latest".to_owned()],
    };
    stream.succeed(&outcome);
    assert_eq!(
        messages(&out),
        [json!({ "stream": format!("sha256:{}\n", "c".repeat(64)) })]
    );
}

#[test]
fn a_failed_run_ends_the_stream_with_its_code() {
    let mut out = Vec::new();
    let mut stream = BuildStream::new(&mut out, false, true);
    stream.step(&start(1, 2, "FROM busybox"));
    stream.step_end(StepId(0), &StepEnd::Done(digest('a')));
    stream.step(&start(2, 2, "RUN false"));
    stream.running_in(StepId(0), &"d".repeat(64));
    let error = BuildError::StepFailed {
        command: "/bin/sh -c false".to_owned(),
        code: 1,
    };
    assert!(stream.fail(&error).is_some());
    let messages = messages(&out);
    let message = "The command '/bin/sh -c false' returned a non-zero code: 1";
    assert_eq!(
        messages.last().unwrap(),
        &json!({ "errorDetail": { "message": message, "code": 1 }, "error": message })
    );
}

#[test]
fn a_quiet_build_that_fails_shows_what_it_held_back() {
    let mut out = Vec::new();
    let mut stream = BuildStream::new(&mut out, true, true);
    stream.step(&start(1, 1, "FROM busybox"));
    let error = BuildError::Invalid("pull access denied".to_owned());
    assert!(stream.fail(&error).is_some());
    let messages = messages(&out);
    assert_eq!(streams(&messages), "Step 1/1 : FROM busybox\n");
    assert_eq!(
        messages.last().unwrap(),
        &json!({ "errorDetail": { "message": "pull access denied" }, "error": "pull access denied" })
    );
}

#[test]
fn an_error_before_any_message_is_a_plain_http_error() {
    for quiet in [false, true] {
        let mut out = Vec::new();
        let stream = BuildStream::new(&mut out, quiet, true);
        let error = BuildError::Unsupported("building is not implemented yet".to_owned());
        assert!(stream.fail(&error).is_none());
        assert!(out.is_empty());
        assert_eq!(
            api_error(&error),
            ApiError::new(501, "building is not implemented yet")
        );
    }
    let invalid = BuildError::Invalid("unknown instruction: FORM".to_owned());
    assert_eq!(api_error(&invalid).status, 400);
    let engine = BuildError::Engine(berth_engine::EngineError::NoSuchImage(
        "nosuch:latest".to_owned(),
    ));
    assert_eq!(
        api_error(&engine),
        ApiError::new(404, "No such image: nosuch:latest")
    );
}

#[test]
fn output_split_inside_a_character_is_joined() {
    let mut out = Vec::new();
    let mut stream = BuildStream::new(&mut out, false, true);
    let text = "héllo wörld\n".as_bytes();
    stream.output(StepId(0), OutputStream::Stdout, &text[..2]);
    stream.output(StepId(0), OutputStream::Stdout, &text[2..9]);
    stream.output(StepId(0), OutputStream::Stdout, &text[9..]);
    stream.output(StepId(0), OutputStream::Stdout, b"\xff\n");
    stream.step(&start(1, 1, "FROM busybox"));
    stream.succeed(&BuildOutcome {
        image: digest('a'),
        tags: Vec::new(),
    });
    let all = streams(&messages(&out));
    assert!(
        all.starts_with("héllo wörld\n\u{fffd}\nStep 1/1"),
        "{all:?}"
    );
}

#[test]
fn a_client_that_went_away_stops_the_writes() {
    struct Gone;
    impl Write for Gone {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut stream = BuildStream::new(Gone, false, true);
    assert!(!stream.cancelled());
    stream.step(&start(1, 1, "FROM busybox"));
    assert!(stream.cancelled());
    let polled = BuildStream::new(Vec::new(), false, true).with_gone_check(|| true);
    assert!(polled.cancelled());
}

#[test]
fn messages_in_dockers_words() {
    assert_eq!(
        step_messages(2, 3, "RUN make"),
        [
            json!({ "stream": "Step 2/3 : RUN make" }),
            json!({ "stream": "\n" })
        ]
    );
    assert_eq!(
        image_message(&digest('9')),
        json!({ "stream": " ---> 999999999999\n" })
    );
    assert_eq!(warning_message("x\n"), json!({ "stream": "[Warning] x\n" }));
    assert_eq!(
        error_message("failed", Some(0)),
        json!({ "errorDetail": { "message": "failed" }, "error": "failed" })
    );
    assert_eq!(
        running_in_message("short"),
        json!({ "stream": " ---> Running in short\n" })
    );
}

#[test]
fn stderr_output_is_sent_whole_and_in_red() {
    let mut out = Vec::new();
    let mut stream = BuildStream::new(&mut out, false, true);
    stream.step(&start(1, 1, "RUN x"));
    stream.output(StepId(0), OutputStream::Stdout, b"out ");
    stream.output(StepId(0), OutputStream::Stderr, b"Ancient Temple\n");
    stream.output(StepId(0), OutputStream::Stdout, b"more\n");
    let outcome = BuildOutcome {
        image: digest('c'),
        tags: Vec::new(),
    };
    stream.succeed(&outcome);
    let messages = messages(&out);
    // docker-py's test_build_stderr_data looks for this one message.
    assert!(
        messages.contains(&json!({ "stream": "\u{1b}[91mAncient Temple\n\u{1b}[0m" })),
        "{messages:?}"
    );
    assert!(
        streams(&messages).contains("out \u{1b}[91mAncient Temple\n\u{1b}[0mmore\n"),
        "{messages:?}"
    );
}
