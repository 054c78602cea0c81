use std::io::{self, Read};

use super::*;
use proptest::prelude::*;

/// The obviously right encoder: builds one frame byte by byte from RFC 6455 §5.2.
fn naive_frame(fin: bool, opcode: u8, mask: Option<[u8; 4]>, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![(u8::from(fin) << 7) | opcode];
    let m = if mask.is_some() { 0x80 } else { 0 };
    if payload.len() < 126 {
        out.push(m | payload.len() as u8);
    } else if payload.len() <= 0xFFFF {
        out.push(m | 126);
        out.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    } else {
        out.push(m | 127);
        out.extend_from_slice(&(payload.len() as u64).to_be_bytes());
    }
    match mask {
        Some(key) => {
            out.extend_from_slice(&key);
            out.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
        }
        None => out.extend_from_slice(payload),
    }
    out
}

fn drain(reader: &mut WsReader) -> Vec<(Opcode, Vec<u8>)> {
    let mut out = Vec::new();
    while let Some(message) = reader.next_message().unwrap() {
        out.push((message.opcode, message.payload.to_vec()));
    }
    out
}

#[test]
fn lengths_7_16_and_64_bit() {
    for len in [0usize, 125, 126, 65_535, 65_536, 200_000] {
        let payload: Vec<u8> = (0..len).map(|i| i as u8).collect();
        let mut reader = WsReader::new(Role::Client, 256);
        reader.feed(&naive_frame(true, 1, None, &payload));
        assert_eq!(drain(&mut reader), vec![(Opcode::Text, payload)], "len {len}");
    }
}

#[test]
fn writer_frames_match_the_naive_encoder() {
    for len in [0usize, 1, 125, 126, 300, 65_535, 65_536] {
        let payload: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
        let mut server = WsWriter::new(Role::Server, 64, 1);
        assert_eq!(server.frame_of(Opcode::Binary, &payload), naive_frame(true, 2, None, &payload));
        let mut client = WsWriter::new(Role::Client, 64, 99);
        let frame = client.frame_of(Opcode::Text, &payload).to_vec();
        let header = parse_header(&frame).unwrap().unwrap();
        let key = header.mask.unwrap();
        assert_eq!(frame, naive_frame(true, 1, Some(key), &payload));
        let mut server_reader = WsReader::new(Role::Server, 64);
        server_reader.feed(&frame);
        assert_eq!(drain(&mut server_reader), vec![(Opcode::Text, payload)]);
    }
}

#[test]
fn masks_differ_between_frames() {
    let mut client = WsWriter::new(Role::Client, 64, 7);
    let a = parse_header(client.frame_of(Opcode::Text, b"x")).unwrap().unwrap().mask;
    let b = parse_header(client.frame_of(Opcode::Text, b"x")).unwrap().unwrap().mask;
    assert_ne!(a, b);
}

#[test]
fn fragments_reassemble_with_control_frames_between() {
    let mut bytes = naive_frame(false, 1, None, b"hel");
    bytes.extend(naive_frame(true, 9, None, b"ping!"));
    bytes.extend(naive_frame(false, 0, None, b"lo "));
    bytes.extend(naive_frame(true, 0, None, b"world"));
    bytes.extend(naive_frame(true, 2, None, &[1, 2, 3]));
    bytes.extend(naive_frame(true, 8, None, &[0x03, 0xE8]));
    let mut reader = WsReader::new(Role::Client, 256);
    reader.feed(&bytes);
    assert_eq!(
        drain(&mut reader),
        vec![
            (Opcode::Ping, b"ping!".to_vec()),
            (Opcode::Text, b"hello world".to_vec()),
            (Opcode::Binary, vec![1, 2, 3]),
            (Opcode::Close, vec![0x03, 0xE8]),
        ]
    );
}

#[test]
fn protocol_violations_are_errors() {
    let check = |bytes: Vec<u8>, role: Role| {
        let mut reader = WsReader::new(role, 256);
        reader.feed(&bytes);
        reader.next_message().unwrap_err()
    };
    assert!(matches!(check(naive_frame(true, 3, None, b""), Role::Client), WsError::Protocol(_)));
    assert!(matches!(check(naive_frame(true, 1, None, b"x"), Role::Server), WsError::Protocol(_)));
    assert!(matches!(check(naive_frame(true, 1, Some([1, 2, 3, 4]), b"x"), Role::Client), WsError::Protocol(_)));
    assert!(matches!(check(naive_frame(true, 0, None, b"x"), Role::Client), WsError::Protocol(_)));
    assert!(matches!(check(naive_frame(false, 9, None, b"x"), Role::Client), WsError::Protocol(_)));
    let mut rsv = naive_frame(true, 1, None, b"x");
    rsv[0] |= 0x40;
    assert!(matches!(check(rsv, Role::Client), WsError::Protocol(_)));
    let mut nested = naive_frame(false, 1, None, b"a");
    nested.extend(naive_frame(true, 1, None, b"b"));
    assert!(matches!(check(nested, Role::Client), WsError::Protocol(_)));
    let mut huge = vec![0x81, 127];
    huge.extend_from_slice(&u64::MAX.to_be_bytes());
    assert_eq!(check(huge, Role::Client), WsError::TooLarge(u64::MAX));
}

#[test]
fn reads_from_a_stream_in_small_pieces_and_reports_eof() {
    struct Trickle(Vec<u8>, usize);
    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(3).min(self.0.len() - self.1);
            buf[..n].copy_from_slice(&self.0[self.1..self.1 + n]);
            self.1 += n;
            Ok(n)
        }
    }
    let mut src = Trickle(naive_frame(true, 1, None, &[b'a'; 300]), 0);
    let mut reader = WsReader::new(Role::Client, 256);
    let message = loop {
        if let Some(m) = reader.next_message().unwrap() {
            break (m.opcode, m.payload.len());
        }
        reader.fill(&mut src).unwrap();
    };
    assert_eq!(message, (Opcode::Text, 300));
    assert!(reader.next_message().unwrap().is_none());
    assert_eq!(reader.fill(&mut src), Err(WsError::Eof));
}

/// A message split into fragments of the given sizes (control frames never fragment).
fn fragments(opcode: u8, payload: &[u8], cuts: &[usize], mask: Option<[u8; 4]>) -> Vec<u8> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (payload.len() + 1)).collect();
    points.sort_unstable();
    points.dedup();
    points.retain(|&p| p > 0 && p < payload.len());
    points.push(payload.len());
    let mut out = Vec::new();
    let mut from = 0;
    for (i, &to) in points.iter().enumerate() {
        let op = if i == 0 { opcode } else { 0 };
        out.extend(naive_frame(i + 1 == points.len(), op, mask, &payload[from..to]));
        from = to;
    }
    out
}

proptest! {
    #[test]
    fn any_messages_any_fragmentation_any_chunking(
        messages in prop::collection::vec((prop::bool::ANY, prop::collection::vec(any::<u8>(), 0..400), prop::collection::vec(0usize..400, 0..4)), 1..12),
        chunk in 1usize..700,
        server in prop::bool::ANY,
    ) {
        let role = if server { Role::Server } else { Role::Client };
        let mask = server.then_some([0xA5, 0x01, 0xFF, 0x3C]);
        let mut wire = Vec::new();
        let mut want = Vec::new();
        for (text, payload, cuts) in &messages {
            let opcode = if *text { 1 } else { 2 };
            wire.extend(fragments(opcode, payload, cuts, mask));
            want.push((if *text { Opcode::Text } else { Opcode::Binary }, payload.clone()));
        }
        let mut reader = WsReader::new(role, 256);
        let mut got = Vec::new();
        for piece in wire.chunks(chunk) {
            reader.feed(piece);
            got.extend(drain(&mut reader));
        }
        prop_assert_eq!(got, want);
        prop_assert_eq!(reader.buffered(), 0);
    }

    #[test]
    fn mask_is_an_involution_and_matches_bytewise_xor(payload in prop::collection::vec(any::<u8>(), 0..100), key: [u8; 4]) {
        let mut masked = payload.clone();
        apply_mask(&mut masked, key);
        let naive: Vec<u8> = payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]).collect();
        prop_assert_eq!(&masked, &naive);
        apply_mask(&mut masked, key);
        prop_assert_eq!(masked, payload);
    }
}

#[test]
fn push_frame_matches_the_naive_encoder_both_roles() {
    for len in [0usize, 1, 125, 126, 300, 65_535, 65_536] {
        let payload: Vec<u8> = (0..len).map(|i| (i * 13) as u8).collect();
        let mut out = vec![0xEE];
        push_frame(&mut out, Opcode::Text, None, &payload);
        assert_eq!(out[1..], naive_frame(true, 1, None, &payload)[..], "len {len}");
        let mut out = Vec::new();
        push_frame(&mut out, Opcode::Binary, Some([9, 8, 7, 6]), &payload);
        assert_eq!(out, naive_frame(true, 2, Some([9, 8, 7, 6]), &payload), "len {len}");
    }
}

#[test]
fn close_frames_carry_the_code_and_a_cut_reason() {
    let mut out = Vec::new();
    push_close(&mut out, None, close::POLICY, "slow");
    assert_eq!(out, naive_frame(true, 8, None, &[0x03, 0xf0, b's', b'l', b'o', b'w']));
    // 200 two-byte characters: cut to at most 123 bytes, on a character boundary.
    let long = "é".repeat(100);
    let mut out = Vec::new();
    push_close(&mut out, Some([1, 2, 3, 4]), close::TOO_BIG, &long);
    let mut reader = WsReader::new(Role::Server, 256);
    reader.feed(&out);
    let message = reader.next_message().unwrap().unwrap();
    assert_eq!(message.opcode, Opcode::Close);
    assert_eq!(close_code(message.payload), Some(1009));
    assert_eq!(std::str::from_utf8(&message.payload[2..]).unwrap(), "é".repeat(61));
    assert_eq!(close_code(&[3]), None);
}

#[test]
fn the_reader_limit_applies_to_frames_and_to_reassembled_fragments() {
    let mut reader = WsReader::with_limit(Role::Server, 256, 200);
    reader.feed(&naive_frame(true, 1, Some([1, 2, 3, 4]), &[b'x'; 201]));
    assert_eq!(reader.next_message(), Err(WsError::TooLarge(201)));
    let mut reader = WsReader::with_limit(Role::Server, 256, 200);
    let mut bytes = naive_frame(false, 1, Some([1, 2, 3, 4]), &[b'x'; 150]);
    bytes.extend(naive_frame(true, 0, Some([1, 2, 3, 4]), &[b'x'; 60]));
    reader.feed(&bytes);
    assert_eq!(reader.next_message(), Err(WsError::TooLarge(210)));
    assert_eq!(WsError::TooLarge(210).close_code(), close::TOO_BIG);
    assert_eq!(WsError::Protocol("x").close_code(), close::PROTOCOL);
    let mut reader = WsReader::with_limit(Role::Server, 256, 200);
    reader.feed(&naive_frame(true, 1, Some([1, 2, 3, 4]), &[b'x'; 200]));
    assert_eq!(reader.next_message().unwrap().unwrap().payload.len(), 200);
}
