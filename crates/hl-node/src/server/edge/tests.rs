//! The edge's pure parts: which subscriptions are carried, cutting a frame's data out.

use super::*;

fn l2(coin: &str, n_sig_figs: Option<u32>, mantissa: Option<u32>, n_levels: Option<u32>) -> Subscription {
    Subscription::L2Book { coin: coin.to_owned(), n_sig_figs, mantissa, n_levels, fast: None }
}

#[test]
fn carried_subscriptions_map_to_their_subject_and_others_are_refused() {
    let feed = carried(&l2("BTC", Some(5), Some(2), None)).unwrap();
    assert_eq!(HlSubjects::default().data(&feed), "ticktrade.hl.l2Book.BTC.s5m2-20");
    let feed = carried(&l2("BTC", None, None, Some(20))).unwrap();
    assert_eq!(HlSubjects::default().data(&feed), "ticktrade.hl.l2Book.BTC.full-20");
    let refused = carried(&l2("BTC", None, None, Some(10))).unwrap_err();
    assert!(refused.starts_with("Not available on this edge server"), "{refused}");
    assert!(carried(&l2("BTC", Some(7), None, None)).unwrap_err().starts_with("Invalid subscription"));
    for sub in [
        Subscription::L4Book { coin: "BTC".into() },
        Subscription::OrderUpdates { user: "0x0000000000000000000000000000000000000001".into() },
        Subscription::ActiveAssetCtx { coin: "BTC".into() },
    ] {
        assert!(carried(&sub).unwrap_err().contains("is not carried on the bus"), "{sub:?}");
    }
    assert_eq!(carried(&Subscription::AllMids { dex: None }), Ok(HlSubject::AllMids));
    assert_eq!(carried(&Subscription::Trades { coin: "ETH".into() }), Ok(HlSubject::Trades { coin: "ETH".into() }));
}

#[test]
fn a_frames_data_is_cut_out_exactly() {
    let frame = br#"{"channel":"l2Book","data":{"coin":"BTC","time":5,"levels":[[],[]]}}"#;
    assert_eq!(
        frame_data(frame, br#"{"channel":"l2Book","data":"#, b"}").as_deref(),
        Some(r#"{"coin":"BTC","time":5,"levels":[[],[]]}"#)
    );
    let mids = br#"{"channel":"allMids","data":{"mids":{"BTC":"1.5"}}}"#;
    assert_eq!(
        frame_data(mids, br#"{"channel":"allMids","data":{"mids":"#, b"}}").as_deref(),
        Some(r#"{"BTC":"1.5"}"#)
    );
}
