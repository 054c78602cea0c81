//! Deribit's error codes and verbatim messages, as the engine returns them.
//!
//! Owns: `Reject` (a small `Copy` value: code, message, optional reason) and one constructor
//! per error the engine can produce (messages verbatim from Deribit's error-code table).
//! Must not: format or allocate; the simulator turns a `Reject` into a JSON-RPC error object.

/// A request the engine refused. Nothing changed in the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{code} {message}")]
pub struct Reject {
    pub code: i32,
    /// Deribit's message, verbatim.
    pub message: &'static str,
    /// Extra detail for `data` (the parameter at fault, or a reason).
    pub data: Option<&'static str>,
}

macro_rules! rejects {
    ($($name:ident = $code:literal, $message:literal;)+) => {
        impl Reject {
            $(pub const $name: Reject = Reject { code: $code, message: $message, data: None };)+
        }
    };
}

rejects! {
    QTY_TOO_LOW = 10002, "qty_too_low";
    ORDER_OVERLAP = 10003, "order_overlap";
    ORDER_NOT_FOUND = 10004, "order_not_found";
    NOT_ENOUGH_FUNDS = 10009, "not_enough_funds";
    ALREADY_CLOSED = 10010, "already_closed";
    BOOK_CLOSED = 10012, "book_closed";
    INVALID_INSTRUMENT = 10020, "invalid_or_unsupported_instrument";
    INVALID_AMOUNT = 10021, "invalid_amount";
    INVALID_PRICE = 10023, "invalid_price";
    NON_INTEGER_CONTRACT_AMOUNT = 10027, "non_integer_contract_amount";
    NOT_OWNER_OF_ORDER = 10029, "not_owner_of_order";
    INVALID_ARGS_FOR_INSTRUMENT = 10031, "invalid_args_for_instrument";
    PRICE_WRONG_TICK = 10043, "price_wrong_tick";
    TRIGGER_PRICE_WRONG_TICK = 10044, "trigger_price_wrong_tick";
    INVALID_ARGUMENTS = 11029, "invalid_arguments";
    INVALID_TRIGGER_PRICE = 11036, "invalid_trigger_price";
    NOT_OPEN_ORDER = 11044, "not_open_order";
    POST_ONLY_REJECT = 11054, "post_only_reject";
    POST_ONLY_NOT_ALLOWED = 11055, "post_only_not_allowed";
    NOT_FOUND = 13020, "not_found";
    MMP_TRIGGER = 13030, "mmp_trigger";
    NON_UNIQUE_ORDER_LABEL = 13032, "non_unique_order_label";
    MMP_REQUIRED = 13040, "mmp_required";
    QUOTES_FROZEN = 13043, "quotes_frozen";
    TIMED_OUT = 13888, "timed_out";
    INVALID_PARAMS = -32602, "Invalid params";
}

impl Reject {
    /// The same error with a `data` reason.
    pub const fn with_data(self, data: &'static str) -> Reject {
        Reject { data: Some(data), ..self }
    }

    /// `-32602 Invalid params` naming the parameter at fault.
    pub const fn invalid_params(param: &'static str) -> Reject {
        Reject::INVALID_PARAMS.with_data(param)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_messages_are_deribits() {
        assert_eq!((Reject::PRICE_WRONG_TICK.code, Reject::PRICE_WRONG_TICK.message), (10043, "price_wrong_tick"));
        assert_eq!(Reject::POST_ONLY_REJECT.code, 11054);
        assert_eq!(Reject::invalid_params("label").data, Some("label"));
        assert_eq!(Reject::NOT_ENOUGH_FUNDS.to_string(), "10009 not_enough_funds");
    }
}
